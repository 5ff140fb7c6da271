"""The chapters' readers of the committed results: verdicts and counts computed from hand-made files."""

import json

import pytest

from albert_mini.study import results
from albert_mini.study.stats import compare_paired, seed_summary, wilson_interval


def variant_file(folder, mlm_diffs, sop_a, sop_b):
    """A two-row sharing.json: "E=128 none" against its baseline "E=128 all", with the given seed differences."""
    base_mlm = [0.10, 0.11, 0.12]
    rows = {
        "E=128 all": {"E": 128, "sharing": "all", "baseline": "E=128 all", "params": 100,
                      "mlm_acc": seed_summary(base_mlm), "sop": seed_summary([0.5, 0.5, 0.5])},
        "E=128 none": {"E": 128, "sharing": "none", "baseline": "E=128 all", "params": 200,
                       "mlm_acc": seed_summary([b + d for b, d in zip(base_mlm, mlm_diffs)]),
                       "sop": seed_summary([0.6, 0.6, 0.6]),
                       "vs_baseline": {"mlm_acc": seed_summary(mlm_diffs), "sop": compare_paired(sop_a, sop_b)}},
    }
    (folder / "sharing.json").write_text(json.dumps({"rows": rows, "meta": {}}))
    return results.variant_table("sharing", folder)


def test_paired_lines_call_a_difference_only_when_its_interval_excludes_zero(tmp_path):
    clear = variant_file(tmp_path, [0.020, 0.021, 0.022], ["1" * 80 + "0" * 20], ["1" * 40 + "0" * 60])
    line, = results.paired_lines(clear)
    assert line.startswith("E=128 none - E=128 all: MLM +2.1 points [+1.9, +2.3] (ahead)")
    assert "SOP +40.0" in line and line.endswith("(ahead)")
    assert results.verdict_counts(clear) == {"mlm": {"ahead": 1}, "sop": {"ahead": 1}}

    noisy = variant_file(tmp_path, [0.03, -0.02, 0.00], ["10" * 50], ["01" * 50])
    line, = results.paired_lines(noisy)
    assert "MLM +0.3 points" in line and "(no clear difference); SOP +0.0" in line
    assert results.verdict_counts(noisy) == {"mlm": {"no clear difference": 1}, "sop": {"no clear difference": 1}}


def test_seeds_above_chance_use_each_seeds_wilson_interval():
    # 62 of 100 is above 50% (Wilson low 0.522); 55 of 100 is not (0.452); 35 of 100 is below (high 0.449).
    assert wilson_interval(62, 100)[0] > 0.5 > wilson_interval(55, 100)[0] and wilson_interval(35, 100)[1] < 0.5
    check = results.seeds_above_chance(["1" * 62 + "0" * 38, "1" * 55 + "0" * 45, "1" * 35 + "0" * 65])
    assert (check["above"], check["below"], check["seeds"]) == (1, 1, 3)
    assert [s["accuracy"] for s in check["per_seed"]] == [0.62, 0.55, 0.35]


def test_table5_reading_names_each_model_task_and_method():
    row = {"correct": {"nsp": ["1" * 70 + "0" * 30], "sop": ["1" * 50 + "0" * 50]},
           "method": {"nsp": "linear probe", "sop": "trained head"}}
    lines = results.table5_reading({"rows": {"sop": row}})
    assert lines == ["SOP-trained on NSP (linear probe): per seed 70.0%; above chance in 1 of 1 seeds, below in 0",
                     "SOP-trained on SOP (trained head): per seed 50.0%; above chance in 0 of 1 seeds, below in 0"]


def test_smoothness_reading_adds_up_the_layer_to_layer_changes():
    curve = {"trained": {"degrees": {"mean": [10.0, 8.0, 9.0, 5.0]}, "l2": {"mean": [1.0, 0.5, 0.5, 0.75]}}}
    reading = results.smoothness_reading({"m": curve})["m"]
    # degrees: 2 + 1 + 4 = 7 of change, 5 of it net; l2: 0.5 + 0 + 0.25 = 0.75 of change, 0.25 net
    assert reading["degrees_wobble"] == pytest.approx(2) and reading["l2_wobble"] == pytest.approx(0.5)
    assert results.wobble([9.0, 7.0, 4.0, 1.0]) == 0  # a steady fall does not wobble
    assert reading["largest_rise"] == pytest.approx(1.0) and not reading["falls_every_layer"]
    assert (reading["first"], reading["last"]) == (10.0, 5.0)
    assert (reading["seeds"], reading["seeds_falling_every_layer"]) == (1, 0)
    curve["trained"]["degrees"]["values"] = [[3.0, 2.0, 1.0, 0.5], [10.0, 8.0, 9.0, 5.0]]
    reading = results.smoothness_reading({"m": curve})["m"]
    assert (reading["seeds"], reading["seeds_falling_every_layer"]) == (2, 1)


def test_mlm_against_subtracts_the_mlm_only_model_seed_by_seed():
    per_seed = {"none": {"0": 0.10, "1": 0.12}, "nsp": {"0": 0.07, "1": 0.10}}
    result = {"rows": {task: {"per_seed": {s: {"mlm_acc": v} for s, v in seeds.items()}}
                       for task, seeds in per_seed.items()}}
    versus = results.mlm_against(result)["nsp"]
    assert versus["values"] == pytest.approx([-0.03, -0.02]) and versus["mean"] == pytest.approx(-0.025)
