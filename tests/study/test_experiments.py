"""The harness's tables, figures and chapter readers on every experiment's committed fast result
(tests/fixtures/experiment_records/), and one experiment run end to end, interrupted and resumed."""

import dataclasses
import json
import subprocess

import pytest
from fast_results import RECORDS, TEST_SEEDS, check_provenance_and_figure, fast_result, fast_results, shape_differences

from albert_mini import count_parameters
from albert_mini.harness import experiments
from albert_mini.harness.experiments.budget import FAST, SEEDS, TOKENS_PER_MODEL, Budget, mini, variant
from albert_mini.harness.experiments.measure import Pretraining
from albert_mini.harness.experiments.runs import RunCache, Runner
from albert_mini.paths import REPO_ROOT
from albert_mini.study.paper import table3_row


@pytest.fixture(scope="module")
def results():
    """Every experiment's committed fast result (fast_results.py)."""
    return fast_results(experiments.EXPERIMENTS)


def test_every_experiment_is_a_module_with_run_figure_and_table():
    for name, module in experiments.EXPERIMENTS.items():
        assert module.__name__ == f"albert_mini.harness.experiments.{name}"
        assert all(callable(getattr(module, f)) for f in ("run", "figure", "table"))


def test_every_experiment_has_a_record():
    assert sorted(path.stem for path in RECORDS.glob("*.json")) == sorted(experiments.EXPERIMENTS)


@pytest.mark.parametrize("name", experiments.EXPERIMENTS)
def test_result_has_provenance_and_a_figure(results, name):
    check_provenance_and_figure(name, results[name])


def _score(correct: int, total: int = 1000) -> dict:
    bits = "1" * correct + "0" * (total - correct)
    return {"accuracy": correct / total, "correct": bits, "answers": [0, 1]}


def test_the_go_no_go_rules_follow_the_plan():
    """Branch point, pilot and extra seeds, on hand-made scores: each rule as pre-registered."""
    from albert_mini.harness.experiments import sentence_task as st

    def pilot(correct):
        return {"after_short": {"sentence_64": {"sop_unmasked": {"probe_pooled": _score(correct)}}}}

    branch = st.FULL_BRANCH
    assert st.pilot_decision(pilot(560), branch) == "go"
    assert st.pilot_decision(pilot(540), branch) == "lengthen"  # above chance, below 55%
    lengthened = dataclasses.replace(branch, short_steps=branch.lengthened)
    assert st.pilot_decision(pilot(510), lengthened) == "stop"  # [47.9, 54.1] holds 50%
    assert st.pilot_decision(pilot(540), lengthened) == "go"  # out of chance, though below 55%

    def trunk(head, probe):
        scores = {"sop_unmasked": {"head": _score(head), "probe_pooled": _score(probe)}}
        return {"probes": [{"step": st.FULL_TRUNK.stop, "sentence_64": scores}]}

    assert st.branch_point(trunk(500, 520), st.FULL_TRUNK)[0] == st.FULL_TRUNK.stop
    assert st.branch_point(trunk(560, 520), st.FULL_TRUNK)[0] == st.FULL_TRUNK.fallback_stop

    def difference(values):
        from albert_mini.study.stats import seed_summary
        return {"difference": seed_summary(values)}

    assert st.needs_extra_seeds(difference([0.02, -0.01, 0.03]))  # straddles 0, mean above
    assert not st.needs_extra_seeds(difference([-0.02, 0.01, -0.03]))  # mean below 0
    assert not st.needs_extra_seeds(difference([0.02, 0.021, 0.022]))  # clear of 0


def test_a_constant_head_is_reported_not_tested():
    from albert_mini.harness.experiments.sentence_task import contrast

    def record(bits, answers):
        entry = {"accuracy": bits.count("1") / len(bits), "correct": bits, "answers": answers}
        return {"sentence_64": {"sop_unmasked": {"probe_pooled": entry, "examples": len(bits)}}}

    records = {"sop": {0: record("1100", [0, 1])}, "nsp": {0: record("1010", [0])}}
    c = contrast(records, "sop", "nsp", "sop")
    assert c["per_seed"]["0"]["mcnemar_p"] is None and c["per_seed"]["0"]["constant"] == {"sop": False, "nsp": True}
    records["nsp"][0] = record("1010", [0, 1])
    assert contrast(records, "sop", "nsp", "sop")["per_seed"]["0"]["mcnemar_p"] == 1.0  # one discordant each way


def test_sharing_and_embedding_rows_carry_exact_counts(results):
    for name in ("sharing", "embedding_size"):
        for row in results[name]["rows"].values():
            assert row["params"] == count_parameters(variant(row["sharing"], row["E"]))
    sharing = results["sharing"]["rows"]
    assert sharing["E=128 all"]["params"] < sharing["E=128 ffn"]["params"] < sharing["E=128 attention"]["params"] \
        < sharing["E=128 none"]["params"]


def test_sharing_rows_pair_with_their_baseline(results):
    rows = results["sharing"]["rows"]
    assert "vs_baseline" not in rows["E=128 all"]
    none = rows["E=128 none"]
    diffs = [none["per_seed"][str(s)]["mlm_acc"] - rows["E=128 all"]["per_seed"][str(s)]["mlm_acc"] for s in TEST_SEEDS]
    assert none["vs_baseline"]["mlm_acc"]["values"] == pytest.approx(diffs)
    # Table 3 rows: same E as the paper, E = H next to E = H (the paper's 12M row has E = 128).
    assert table3_row({"sharing": "all", "E": 128}) == (12, 80.1)
    assert table3_row({"sharing": "all", "E": 64}) == (10, 79.0)
    assert table3_row({"sharing": "none", "E": 256}) == (108, 82.3)


def test_smoothness_twin_differs_only_in_sharing(results):
    models = results["smoothness"]["models"]
    assert list(models) == list(experiments.EXPERIMENTS["smoothness"].MODELS)
    shared, twin = [cfg() for cfg in list(experiments.EXPERIMENTS["smoothness"].MODELS.values())[:2]]
    assert (shared.embedding_size, shared.hidden_size) == (twin.embedding_size, twin.hidden_size)
    assert shared.sharing != twin.sharing == "none"
    for entry in models.values():
        for state in ("trained", "init"):
            assert len(entry[state]["l2"]["mean"]) == len(entry[state]["degrees"]["mean"]) == 6
            assert len(entry[state]["degrees"]["values"]) == len(TEST_SEEDS) and entry["tokens"] > 0


@pytest.mark.slow
def test_an_interrupted_experiment_resumes_without_redoing_finished_runs_and_writes_what_its_record_holds(tmp_path):
    """The one experiment the tests train end to end (smoothness, one seed: three small models)."""
    class StopAfterFirst(RunCache):
        def save(self, spec, result, seconds=None):
            super().save(spec, result, seconds)
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C right after the first run ended

    with pytest.raises(KeyboardInterrupt):
        experiments.run("smoothness", FAST, tmp_path, seeds=(0,), cache=StopAfterFirst(tmp_path / "runs"))
    lines = []
    runner = Runner(FAST, (0,), RunCache(tmp_path / "runs"), say=lambda text, **kw: lines.append(text))
    experiments.run("smoothness", FAST, tmp_path, runner=runner)
    assert [line.split(": ")[1].split(" in ")[0] for line in lines] == ["cached", "ran", "ran"]
    assert runner.ran == 2
    # What the result cost counts the run computed before the interruption too, from its stored seconds.
    stored = [json.loads(f.read_text())["seconds"] for f in (tmp_path / "runs").glob("*.json")]
    assert len(stored) == 3 and all(s > 0 for s in stored)
    result = json.loads((tmp_path / "smoothness.json").read_text())
    assert result["meta"]["compute_seconds"] == pytest.approx(sum(stored), abs=0.2)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT)
    check_provenance_and_figure("smoothness", result, seeds=(0,), revision=head.stdout.strip())
    # Its committed record holds what it writes now (else: python tests/fixtures/make_experiment_records.py).
    assert shape_differences(result, fast_result("smoothness")) == []


def test_a_record_that_no_longer_matches_its_experiment_is_found():
    record = fast_result("smoothness")
    written = json.loads(json.dumps(record))
    written["meta"]["added"], written["meta"]["seeds"] = 1, "0 1"
    del written["reading"]
    assert shape_differences(written, record) == ["result.reading only recorded", "result.meta.added only written",
                                                  "result.meta.seeds: str written, list recorded"]
    assert shape_differences(record, json.loads(json.dumps(record))) == []


def test_other_settings_never_reuse_a_cached_run(tmp_path):
    cache = RunCache(tmp_path)
    run = Pretraining("x", mini(), "sop", 0)
    cache.save(run.spec(FAST), {"marker": 1})
    assert cache.load(run.spec(FAST)) == {"marker": 1}
    other_budget = dataclasses.replace(FAST, pretraining={**FAST.pretraining, "lr": FAST.setup().lr / 2})
    for spec in (run.spec(other_budget), Pretraining("x", mini(), "sop", 1).spec(FAST),
                 Pretraining("x", mini(), "nsp", 0).spec(FAST),
                 Pretraining("x", variant("none", 128), "sop", 0).spec(FAST)):
        assert cache.key(spec) != cache.key(run.spec(FAST)) and cache.load(spec) is None


def test_full_budget_is_three_seeds_with_the_curriculum():
    assert SEEDS == (0, 1, 2)
    full = experiments.FULL
    setup = full.setup()
    assert full.tokens == TOKENS_PER_MODEL["full"] == setup.steps * setup.batch_size * setup.seq_len
    assert (setup.short_seq_len, setup.short_fraction) == (64, 0.5)  # half the steps at full length
    short, long = setup.phases()
    assert short.batch_size * short.seq_len == long.batch_size * long.seq_len  # same tokens per step
    assert full.tokens >= 2_000_000  # at 655,360 tokens every model sat on the unigram plateau
    assert setup.warmup >= 40  # fewer warm-up steps leave every 160-step model on the unigram plateau
    with pytest.raises(ValueError, match="less than one batch"):
        Budget(tokens=10, pretraining={})


def test_throughput_and_memory(results):
    rows = results["throughput"]["rows"]
    assert rows["albert-base"]["paper_speedup"] == 5.6
    # Speeds are relative to the reference's measured speed.
    ratio = rows["albert-base"]["tokens_per_second"] / rows["bert-base"]["tokens_per_second"]
    assert rows["albert-base"]["speedup"] == pytest.approx(ratio)
    assert 0.99 < rows["albert-base"]["flop_ratio"] < 1.0  # ALBERT's E -> H projection is its only extra work
    memory = results["memory"]["rows"]
    albert, bert = memory["albert-mini"], memory["bert-mini"]
    # Same L and H: activations differ only by the embedding width (E = 128 vs 256), parameters by 3.5x.
    assert abs(albert["activations"] - bert["activations"]) < 0.1 * bert["activations"]
    assert 3 * albert["parameters"] < bert["parameters"]


def test_unknown_experiment():
    with pytest.raises(ValueError, match="unknown experiment 'speed'"):
        experiments.run("speed", FAST)
    with pytest.raises(ValueError, match="at least one seed"):
        Runner(FAST, ())


def test_results_tables_put_ours_next_to_the_paper(results, tmp_path):
    for name, result in results.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(result))
    text = experiments.results_tables(tmp_path)
    assert "| sop |" in text and "54.0 / 78.9 / 86.5" in text  # Table 5's SOP row
    assert "| E=128 all | 1.98M |" in text and "12M, 80.1" in text  # Table 4's ALBERT-base row
    assert "| none E=256 | 6.98M |" in text and "108M, 82.3" in text  # Table 3's BERT-base row (E = H)
    assert "| all E=64 | 1.42M |" in text and "10M, 79.0" in text  # the paper's E = 64 row, not the 12M one
    assert "speedup here" in text and "activations (MiB)" in text
    assert [line for line in text.splitlines() if line.startswith("### ")] == [
        line for name in experiments.EXPERIMENTS
        for line in experiments.EXPERIMENTS[name].table(results[name]).splitlines() if line.startswith("### ")]


@pytest.mark.slow
def test_command_line_prints_the_estimate_first_and_checks_seeds(capsys, monkeypatch, tmp_path):
    from albert_mini.commands.experiments import main

    monkeypatch.setenv("ALBERT_MINI_FAST", "1")
    # Runs finished earlier must not count (the command takes cache_dir from there once its flags are read).
    monkeypatch.setattr("albert_mini.harness.experiments.runs.cache_dir", lambda: tmp_path)
    assert main(["smoothness", "--seeds", "0", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "expected duration:" in out and "3 runs to train" in out and "tokens/s at 64" in out
    with pytest.raises(SystemExit) as stop:
        main(["smoothness", "--seeds", "0", "0"])
    assert stop.value.code == 2 and "--seeds must be distinct" in capsys.readouterr().err


def test_chapter_readers_read_what_the_experiments_write(results, tmp_path):
    from albert_mini.study import results as readers

    for name, result in results.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(result))
    for name in ("sharing", "embedding_size"):
        rows = readers.variant_table(name, tmp_path)
        differences = readers.variant_differences(rows, "mlm")
        # baseline rows: all-shared at E = 128 (sharing), E = 128 for each sharing setting (embedding size)
        baselines = sum(r["baseline"] == r["model"] for r in rows)
        assert baselines == {"sharing": 1, "embedding_size": 2}[name]
        assert len(differences) == sum(r["mlm_vs_baseline"] is not None for r in rows) == len(rows) - baselines
        assert all(r["mlm_loss"]["n"] == len(TEST_SEEDS) for r in rows)
        assert all(r["mlm"]["n"] == len(TEST_SEEDS) for r in rows)
    table5 = readers.table5_reading(readers.load("sentence_task", tmp_path))
    assert len(table5) == 2 * len(results["sentence_task"]["rows"])
    assert len(readers.table5_decisions(readers.load("sentence_task", tmp_path))) >= 2
    assert len(readers.contrast_lines(readers.load("sentence_task", tmp_path))) == 3
    curves = readers.smoothness_curves(tmp_path)
    assert set(readers.smoothness_reading(curves)) == set(results["smoothness"]["models"])
    speed_rows, meta = readers.speedup_table(tmp_path)
    assert speed_rows and meta["experiment"] == "throughput"


@pytest.mark.slow
def test_all_leaves_out_the_opt_in_experiments(capsys, monkeypatch):
    """`all` never starts the 45,000-step clean version of Table 5; naming it does."""
    from albert_mini.commands.experiments import main

    monkeypatch.setenv("ALBERT_MINI_FAST", "1")
    assert main(["all", "--estimate"]) == 0
    names = capsys.readouterr().out.splitlines()[0].split(":")[0].split(", ")
    assert "sentence_scratch" in experiments.OPT_IN and "sentence_scratch" not in names
    assert names == [n for n in experiments.EXPERIMENTS if n not in experiments.OPT_IN]
    assert main(["sentence_scratch", "--estimate"]) == 0
    assert capsys.readouterr().out.startswith("sentence_scratch:")
