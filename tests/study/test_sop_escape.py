"""Stage B against SOP's plateau (albert_mini/harness/experiments/sop_escape.py): its rule on hand-made scores, its
runs' keys (v3's committed control runs are read, not rerun) and a v3 branch resumed from its checkpoints; its fast
result is read in test_experiments_trunk.py."""

from __future__ import annotations

import pytest
from fast_branches import Killed, die_at_step, fast_trunk_checkpoint

from albert_mini.harness.experiments import sop_escape
from albert_mini.harness.experiments import trunk as trunk_module
from albert_mini.harness.experiments.budget import FAST, FULL
from albert_mini.harness.experiments.runs import RunCache, cache_dir

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def per_seed(*scores):
    """{seed: values} with a primary SOP and a quote-free stratum per seed."""
    return {str(s): {"sop": sop, "sop_no_quote": free} for s, (sop, free) in enumerate(scores)}


def test_a_seed_escapes_only_at_60_percent_and_3_points_over_the_surface():
    result = sop_escape.escape_rate(per_seed((0.60, 0.50), (0.599, 0.60), (0.65, 0.55), (0.51, 0.5)), surface=0.57)
    assert [c["escapes"] for c in result["per_seed"].values()] == [True, False, True, False]
    assert result["escapes"] == 2 and result["seeds"] == 4 and result["rate"] == 0.5
    assert result["quote_free_escapes"] == 2  # seeds 1 and 2 reach 55% without the quote cue
    low, high = result["rate_wilson"]
    assert low < 0.5 < high
    # The margin binds once the surface regression is above 57%: 62% is 2 points over a 60% surface.
    assert not sop_escape.escape_rate(per_seed((0.62, 0.5)), surface=0.60)["per_seed"]["0"]["escapes"]
    none = sop_escape.escape_rate(per_seed(*[(0.52, 0.5)] * 5), surface=0.57)
    low, high = none["rate_wilson"]
    assert none["escapes"] == 0 and low == pytest.approx(0.0, abs=1e-12) and 0.4 < high < 0.45


def test_stage_b_reads_the_committed_v3_control_and_trains_only_seeds_3_and_4():
    planned = sop_escape.plan(FULL, (0, 1, 2))  # --seeds does not change the pre-registered seeds
    assert [p.label for p in planned] == ["trunk", *[f"sop seed {s}" for s in range(5)]]
    cache = RunCache(cache_dir())
    assert all(cache.load(p.spec()) is not None for p in planned[:4])  # the trunk and v3's seeds 0-2
    for p in planned[1:]:
        assert p.spec()["row"] == "sop" and "lever" not in p.spec() and "downstream" in p.spec()
    assert sop_escape.seeds(FAST, (0,)) == [0]


def test_the_command_refuses_other_seeds_than_the_plan_fixes(capsys, monkeypatch, tmp_path):
    """Full settings: --seeds other than 0-4 is one line and exit 2 (it used to be ignored in silence); none, or
    those, go on to the estimate (stopped there: it times the machine, seconds)."""
    from albert_mini.commands.experiments import main, seeds_line

    class Estimated(Exception):
        pass

    def estimate(names, experiments, budget, seeds, cache):
        raise Estimated(names, seeds)

    monkeypatch.delenv("ALBERT_MINI_FAST", raising=False)
    monkeypatch.setattr("albert_mini.harness.experiments.runs.cache_dir", lambda: tmp_path)
    monkeypatch.setattr("albert_mini.harness.experiments.estimate.estimate", estimate)
    with pytest.raises(SystemExit) as stop:
        main(["sop_escape", "--seeds", "0", "1", "2", "--estimate"])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1
    assert "sop_escape runs the seeds its pre-registered plan fixes (0 1 2 3 4)" in err and "drop --seeds" in err
    for given in ([], ["--seeds", "4", "3", "2", "1", "0"]):
        with pytest.raises(Estimated) as reached:
            main(["sop_escape", *given, "--estimate"])
        assert reached.value.args[0] == ["sop_escape"]
    # The header says which seeds run: the plan's, beside the default the other experiments take.
    stage_b = {"sop_escape": sop_escape}
    assert seeds_line(stage_b, [0, 1, 2], False) == "0 1 2 (sop_escape: 0 1 2 3 4, as its plan fixes)"
    assert seeds_line(stage_b, [0, 1, 2, 3, 4], True) == "0 1 2 3 4"


@pytest.fixture(scope="module")
def trunk_checkpoint(tmp_path_factory):
    return fast_trunk_checkpoint(tmp_path_factory)


@pytest.mark.slow
def test_a_v3_branch_killed_mid_run_resumes_to_the_run_without_checkpoints(trunk_checkpoint, tmp_path, monkeypatch):
    """Stage B's new seeds run v3's branch with a checkpoint folder: killed, resumed, the record is the one v3's
    code gives in one go without a folder (scores, curve and downstream fine-tuning)."""
    args = (trunk_checkpoint, "sop", 0, trunk_module.FAST_TRUNK, trunk_module.FAST_BRANCH, FAST)
    whole = trunk_module.train_branch(*args)
    monkeypatch.setattr(trunk_module, "BRANCH_SAVE_EVERY", 1)
    original = trunk_module.fresh_sentence_classifier

    def draw_then_die_at_the_fourth_step(model, optimizer, seed):  # after 2 short steps and 1 long one
        original(model, optimizer, seed)
        die_at_step(optimizer, 4)

    monkeypatch.setattr(trunk_module, "fresh_sentence_classifier", draw_then_die_at_the_fourth_step)
    with pytest.raises(Killed):
        trunk_module.train_branch(*args, None, tmp_path / "killed")
    monkeypatch.setattr(trunk_module, "fresh_sentence_classifier", original)
    resumed = trunk_module.train_branch(*args, None, tmp_path / "killed")
    assert not (tmp_path / "killed").exists()  # the checkpoints go once the run has ended
    for key in ("sentence_64", "sentence_128", "mlm_64", "mlm_128", "after_short", "steps"):
        assert resumed[key] == whole[key], key
    for task, scores in whole["downstream"].items():
        assert resumed["downstream"][task]["correct"] == scores["correct"], task
    assert [p["loss"] for p in resumed["curve"]] == pytest.approx([p["loss"] for p in whole["curve"]])
