"""The recipe-search results built from the committed records, the time-to-quality arithmetic, the swapped SOP
pair, and the one-line errors of the study command lines."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from albert_mini.commands import lexical_sop as lexical_sop_command
from albert_mini.commands import recipe_search as recipe_search_command
from albert_mini.commands import time_to_quality as time_to_quality_command
from albert_mini.harness.research.recipe_results import build_results, leaders, table
from albert_mini.harness.research.time_to_quality import build_results as ttq_results
from albert_mini.harness.research.time_to_quality import compare, minutes_to_reach
from albert_mini.paths import repo_root
from albert_mini.study.collapse import rolling_mean
from albert_mini.study.showcase import swapped
from albert_mini.text.instances import Instance
from albert_mini.training.rundir import read_run
from cli_helpers import cli_error

RECORDS = repo_root() / "data/results/recipe_search"


@pytest.fixture(scope="module")
def results():
    return build_results(RECORDS)


def test_committed_json_is_what_the_records_build(results):
    committed = json.loads((repo_root() / "data/results/recipe_search.json").read_text())
    assert committed["command"] == "albert-mini recipe-search results --overwrite" and results["git_revision"]
    assert [p["name"] for p in committed["probes"]] == [p["name"] for p in results["probes"]]
    assert [p["held_out_mlm"] for p in committed["probes"]] == [p["held_out_mlm"] for p in results["probes"]]
    assert [c["collapse_step"] for c in committed["controls"]] == [c["collapse_step"] for c in results["controls"]]


def test_probe_numbers_and_repeats(results):
    probes = {p["name"]: p for p in results["probes"]}
    assert probes["base2"]["settings"] == {} and probes["base-lamb5e-3"]["repeat_of"] == "base2"
    assert probes["base2"]["held_out_mlm"] == probes["base-lamb5e-3"]["held_out_mlm"]  # the rerun reproduced
    assert round(100 * probes["base2"]["held_out_mlm"], 2) == 12.40
    assert round(100 * probes["seq64b"]["held_out_mlm_by_len"]["64"], 2) == 15.33
    assert round(100 * probes["init05-lamb5e-3"]["held_out_mlm"], 2) == 6.69
    assert all(p["tokens"] == p["steps"] * p["recipe"]["batch_size"] * p["recipe"]["seq_len"] for p in probes.values())
    names = [p["name"] for p in leaders(results, top=5)]
    assert names[0] == "mask30" and "base2" in names
    assert table(results).count("\n") == len(names) + 1


def test_controls_collapse_only_with_adamw_constant_rate_and_clipping(results):
    controls = {c["name"]: c for c in results["controls"]}
    assert 150 <= controls["ctl-adamw-1e-3-const"]["collapse_step"] <= 200
    assert not controls["ctl-adamw-1e-3-const"]["recovered"]
    assert controls["ctl-adamw-1e-3-const"]["checks"][-1]["position_cosine"] > 0.999
    for name in ("ctl-adamw-1e-3-const-noclip", "ctl-adamw-1e-3", "ctl-lamb-5e-3"):
        assert controls[name]["collapse_step"] is None and controls[name]["final_held_out_acc"] > 0.99


def test_rolling_mean():
    assert rolling_mean([1, 0, 1, 1], 2) == [1.0, 0.5, 0.5, 1.0]


def test_swapped_pair_exchanges_segments_and_flips_the_label():
    x = Instance(np.array([2, 10, 11, 3, 20, 3], dtype=np.int32), 2, 1, 0, (0, 0, 2), (0, 2, 3))
    y = swapped(x)
    assert y.tokens.tolist() == [2, 20, 3, 10, 11, 3] and (y.len_a, y.len_b, y.label) == (1, 2, 1)
    assert y.token_type_ids.tolist() == [0, 0, 0, 1, 1, 1]


def test_minutes_to_reach_ignores_the_untrained_start():
    curve = [{"minutes": m, "mlm_acc": a} for m, a in ((0, 0.063), (1, 0.05), (2, 0.10), (3, 0.12))]
    assert minutes_to_reach(curve, 0.063) == pytest.approx(1.26)
    assert minutes_to_reach(curve, 0.11) == pytest.approx(2.5)
    assert minutes_to_reach(curve, 0.2) is None
    old = [{"minutes": 3.0, "mlm_acc": 0.10, "sentence_acc": 0.5}]
    assert compare(old, curve)["speedup"] == pytest.approx(3.0 / 2.0)


def write_run(folder, rows):
    folder.mkdir()
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_time_to_quality_from_run_directories(tmp_path):
    old_rows = [{"type": "eval", "step": s, "mlm_acc": a, "sentence_acc": 0.5, "elapsed_s": 60 * m}
                for s, m, a in ((100, 1, 0.08), (200, 2, 0.10), (300, 3, 0.11))]
    new_rows = [{"type": "train", "step": 10, "elapsed_s": 5}] + [
        {"type": "eval", "step": s, "mlm_acc": a, "sentence_acc": 0.55, "elapsed_s": 60 * m}
        for s, m, a in ((100, 1, 0.09), (200, 2, 0.12), (300, 3, 0.13), (400, 4, 0.14))]
    write_run(tmp_path / "old", old_rows)
    write_run(tmp_path / "new", new_rows)
    result = ttq_results(tmp_path / "old", tmp_path / "new", machine="test")
    common = result["at_common_minutes"]
    assert common["minutes"] == 3 and common["new_mlm"] == 0.13  # compared at the old run's last minute
    assert common["new_minutes_to_old_final_mlm"] == pytest.approx(1 + (0.11 - 0.09) / 0.03)
    assert math.isclose(common["speedup"], 3 / common["new_minutes_to_old_final_mlm"])


def test_time_to_quality_reads_both_classroom_runs_and_the_committed_file_is_what_they_build():
    old, new = repo_root() / "data/results/classroom-model-v1", repo_root() / "data/results/classroom-model-v2"
    settings, curve = read_run(old)
    assert settings["steps"] == 3200 and curve[-1]["step"] == 3200 and curve[-1]["minutes"] > 60
    settings, curve = read_run(new)
    assert settings["steps"] == 5000 and settings["short_seq_len"] == 64 and curve[-1]["step"] == 5000
    committed = json.loads((repo_root() / "data/results/time_to_quality.json").read_text())
    rebuilt = json.loads(json.dumps(ttq_results(old.relative_to(repo_root()), new.relative_to(repo_root()),
                                                machine=committed["machine"], command=committed["command"])))
    assert rebuilt.pop("git_revision") and committed.pop("git_revision")  # of this checkout; of the one that made it
    assert rebuilt == committed


def test_command_lines_fail_in_one_line(capsys, tmp_path):
    assert "Recipe field" in cli_error(recipe_search_command.main, ["probe", "x", "--set", "nonsense=1"], capsys)
    assert "needs float" in cli_error(recipe_search_command.main, ["probe", "x", "--set", "lr=fast"], capsys)
    sgd = ["control", "x", "--set", "optimizer=sgd"]
    assert "optimizer must be one of" in cli_error(recipe_search_command.main, sgd, capsys)
    no_records = ["results", "--records", str(tmp_path / "no")]
    assert "not a folder" in cli_error(recipe_search_command.main, no_records, capsys)
    no_runs = ["results", str(tmp_path), str(tmp_path), "--out", str(tmp_path / "ttq.json"), "--figure",
               str(tmp_path / "ttq.png")]
    assert "no metrics.jsonl" in cli_error(time_to_quality_command.main, no_runs, capsys)
    assert "--steps" in cli_error(lexical_sop_command.main, ["--steps", "0"], capsys)


def test_committed_leak_control_scores_agree_with_their_counts_and_intervals():
    from albert_mini.study.stats import wilson_interval

    record = json.loads((repo_root() / "data/results/leak_control.json").read_text())
    for name in ("constant_answer", "surface_probe", "network"):
        r = record[name]
        assert r["accuracy"] == pytest.approx(r["correct"] / r["total"])
        assert r["interval"] == pytest.approx(list(wilson_interval(r["correct"], r["total"])))
    assert record["constant_answer"]["accuracy"] == pytest.approx(max(record["label_1_share"],
                                                                     1 - record["label_1_share"]))
    assert record["network"]["accuracy"] == pytest.approx(record["log"][-1]["held_out_acc"])
    for c in record["network_vs"].values():
        assert c["bootstrap"]["difference"] == pytest.approx((c["only_a"] - c["only_b"]) / record["network"]["total"])
