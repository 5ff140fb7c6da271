"""Results at a glance: the compact seed table and the one verdict sentence, on hand-made differences."""

import json

import pytest

from albert_mini.study import results
from albert_mini.study.glance import Difference, seed_table, verdict
from albert_mini.study.stats import seed_summary

CLEAR = Difference("shared", "unshared", [0.03, 0.04, 0.05], better="lower")  # interval [+0.015, +0.065]
CROSSING = Difference("attention", "ffn", [-0.01, -0.01, -0.02], better="lower")  # its interval crosses 0


def test_reading_follows_the_interval_and_the_direction():
    assert CLEAR.reading() == "unshared better"  # a higher loss: B is better
    assert Difference("a", "b", [0.03, 0.04, 0.05]).reading() == "a better"  # higher is better: A is
    assert CROSSING.reading() == "no clear difference" and not CROSSING.resolved()
    assert Difference("a", "b", [0.5]).reading() == "one seed: no interval"


def test_verdict_wording_changes_when_an_interval_crosses_zero():
    assert verdict([CLEAR]).startswith("Over 3 seeds, unshared is better on MLM loss")
    assert "includes zero" in verdict([CROSSING]) and "cannot tell" in verdict([CROSSING])
    both = verdict([CLEAR, CROSSING])
    assert both.startswith("1 of 2 differences are resolved over 3 seeds")
    assert "the interval of attention vs ffn includes zero" in both
    assert verdict([CLEAR, CLEAR]).startswith("All 2 differences are resolved")
    assert verdict([CROSSING, CROSSING]).startswith("None of the 2 differences is resolved")
    assert verdict([]) == "Nothing to compare."


def test_verdict_is_one_sentence():
    for case in ([CLEAR], [CROSSING], [CLEAR, CROSSING], [CLEAR, CLEAR], [CROSSING, CROSSING]):
        text = verdict(case)
        assert text.endswith(".") and text.count(". ") == 0


def test_seed_table_has_one_row_per_difference_with_its_interval_and_seeds():
    table = seed_table([CLEAR, Difference("p", "r", [0.10, -0.02, 0.01], "accuracy, points", scale=100, digits=1,
                                          note="r gave one answer in seed 0")])
    lines = table.splitlines()
    assert len(lines) == 4 and lines[0].startswith("| A - B |")
    low, high = seed_summary([0.03, 0.04, 0.05])["ci95"]
    assert f"+0.040 [{low:+.3f}, {high:+.3f}]" in lines[2] and "| 0 of 3 |" in lines[2]
    assert "+10.0, -2.0, +1.0" in lines[3] and "2 of 3" in lines[3]
    assert lines[3].endswith("no clear difference; r gave one answer in seed 0 |")


def test_finetune_differences_note_a_constant_head(tmp_path):
    pretrained, random = [0.69, 0.69, 0.675], [0.50, 0.692, 0.67]
    row = {"pretrained": {"accuracy": seed_summary(pretrained), "settings": {"steps": 1, "batch_size": 1},
                          "epochs": 1.0, "n": 400, "constant_seeds": 0},
           "random": {"accuracy": seed_summary(random), "constant_seeds": 1},
           "pretrained_vs_random": {"accuracy": seed_summary([a - b for a, b in zip(pretrained, random)]),
                                    "mcnemar_per_seed": [None, 0.9, 0.8]},
           "pretrained_vs_baseline": {"accuracy": seed_summary([v - 0.76 for v in pretrained])}}
    result = {"rows": {"polarity": row}, "baselines": {"polarity": {"accuracy": 0.76}}, "chance": {}}
    (tmp_path / "finetune.json").write_text(json.dumps(result))
    rows = results.finetune_rows(tmp_path)
    versus_random, = results.finetune_differences(rows)
    assert versus_random.note == "random encoder gave one answer in 1 of 3 seeds (not tested by McNemar)"
    versus_baseline, = results.finetune_differences(rows, "baseline")
    assert versus_baseline.reading() == "baseline better"
    assert verdict([versus_baseline]).startswith("Over 3 seeds, baseline is better")


def test_variant_differences_and_contrast_read_the_committed_table():
    rows = results.variant_table("sharing")
    loss = results.variant_differences(rows)
    assert [d.b for d in loss] == ["E=128 all"] * 3 and all(d.better == "lower" for d in loss)
    pair = results.contrast(rows, "E=128 attention", "E=128 ffn")
    assert pair.summary()["mean"] == pytest.approx(results.row_difference(rows, "E=128 attention",
                                                                          "E=128 ffn")["mean"])


def test_paired_verdict_on_examples_says_above_below_or_level():
    from albert_mini.study.glance import accuracy_table, paired_verdict

    def versus(difference, low, high):
        return {"bootstrap": {"difference": difference, "ci95": [low, high]}, "mcnemar_p": 0.5}

    text = paired_verdict("the head", {"constant": versus(0.03, 0.005, 0.06), "probe": versus(0.0, -0.01, 0.01),
                                       "oracle": versus(-0.2, -0.25, -0.15)})
    assert text == ("On the same examples, the head is above constant (+3.0 points [+0.5, +6.0], McNemar p = 0.5) "
                    "and level with probe (+0.0 points [-1.0, +1.0], McNemar p = 0.5) and below oracle (-20.0 "
                    "points [-25.0, -15.0], McNemar p = 0.5).")
    table = accuracy_table({"head": {"accuracy": 0.631, "interval": [0.606, 0.656], "total": 1408}})
    assert table.splitlines()[2] == "| head | 63.1% | [60.6, 65.6] | 1,408 |"
