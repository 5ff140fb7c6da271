"""The Table 5 family's committed fast results (fast_results.py): Table 5 v3 (sentence_task) and Stage B
(sop_escape) against SOP's plateau, branched from one fast trunk."""

import json

import pytest
from fast_results import TEST_SEEDS, fast_results

from albert_mini.harness.experiments import sop_escape


@pytest.fixture(scope="module")
def results():
    return fast_results(("sentence_task", "sop_escape"))


def test_sentence_task_scores_every_row_on_the_same_examples(results):
    from albert_mini.harness.experiments.sentence_task import entry
    from albert_mini.harness.experiments.trunk import FAST_TRUNK, scored_pairs

    result = results["sentence_task"]
    rows = result["rows"]
    assert set(rows) == {"trunk", "none", "nsp", "sop"} and result["plan"]["contrasts"]
    assert [d["step"] for d in result["decisions"]][:2] == ["branch point", "seed-0 SOP branch after 2 short steps"]
    for row in rows.values():
        for task in ("nsp", "sop"):
            # Every held-out pair, the same set for every row; the primary score is a probe for every row.
            assert row["examples"][task] == len(scored_pairs(task, "held_out", 64, False, FAST_TRUNK)[1])
            assert row["method"][task].startswith("linear probe on the frozen pooled output")
            assert row[task]["mean"] == pytest.approx(sum(row[task]["values"]) / len(row[task]["values"]))
    for name in ("none", "nsp", "sop"):
        per_seed = rows[name]["per_seed"]
        assert sorted(per_seed) == [str(s) for s in result["seeds"]]
        assert {"sop", "nsp", "sop_128", "sop_masked", "sop_mean", "mlm_acc", "mlm_acc_128"} <= set(per_seed["0"])
        assert ("sop_head" in per_seed["0"]) == (name == "sop") and ("nsp_head" in per_seed["0"]) == (name == "nsp")
        # The quote strata split the same pairs: their counts add up to the row's SOP pairs.
        strata = per_seed["0"]["strata"]["sop"]
        assert strata["quote"]["pairs"] + strata["no_quote"]["pairs"] == rows[name]["examples"]["sop"]
        assert per_seed["0"]["sop_quote"] == strata["quote"]["accuracy"] and "sop_no_quote" in rows[name]
    assert len({row["mlm_tokens"] for name, row in rows.items() if name != "trunk"}) == 1  # same masked tokens
    # A contrast is the difference of primary scores seed by seed; its summary is their mean.
    contrast = result["contrasts"]["sop_vs_nsp_on_sop"]
    diffs = [rows["sop"]["per_seed"][str(s)]["sop"] - rows["nsp"]["per_seed"][str(s)]["sop"] for s in TEST_SEEDS]
    assert [contrast["per_seed"][str(s)]["difference"] for s in TEST_SEEDS] == pytest.approx(diffs)
    assert contrast["difference"]["mean"] == pytest.approx(sum(diffs) / len(diffs))
    assert set(result["contrasts"]) == {"sop_vs_nsp_on_sop", "nsp_vs_none_on_sop", "sop_vs_none_on_nsp"}
    # Downstream: every row of every seed fine-tuned on both tasks, differences paired by seed.
    for task in ("austen-mc", "polarity"):
        down = result["downstream"][task]
        gaps = [down["sop"]["per_seed"][str(s)]["accuracy"] - down["nsp"]["per_seed"][str(s)]["accuracy"]
                for s in TEST_SEEDS]
        assert down["sop_minus_nsp"]["values"] == pytest.approx(gaps)
    assert entry({"sentence_64": {"sop_unmasked": {"probe_pooled": {"accuracy": 0.5}}}}, "sop")["accuracy"] == 0.5
    assert [p["step"] for p in result["trunk"]["points"]] == list(FAST_TRUNK.probe_at)
    assert result["meta"]["budget"]["trunk"]["stop"] == FAST_TRUNK.stop  # the experiment's own plans


def test_stage_b_writes_its_row_its_escape_rate_and_its_figure(results):
    result = results["sop_escape"]
    assert result["seeds"] == list(TEST_SEEDS) and set(result["row"]["per_seed"]) == {"0", "1"}
    assert result["escape"]["seeds"] == 2 and set(result["escape"]["per_seed"]) == {"0", "1"}
    for values in result["row"]["per_seed"].values():  # every SOP score carries its quote strata
        strata = values["strata"]["sop"]
        assert strata["quote"]["pairs"] + strata["no_quote"]["pairs"] == strata["all"]["pairs"]
    assert result["trunk_points"] and result["row"]["after_short_step"] < result["row"]["steps"]
    # Stage B's seeds are v3's SOP branches: the same runs, scored the same, as sentence_task's SOP row.
    v3 = results["sentence_task"]["rows"]["sop"]["per_seed"]
    assert {s: v["sop"] for s, v in result["row"]["per_seed"].items()} == {s: v3[s]["sop"] for s in ("0", "1")}
    table = sop_escape.table(result)
    assert table.count("\n| ") == 3 and "escape rate: " in table  # a header and a line per seed
    assert json.loads(json.dumps(result["plan"])) == sop_escape.PLAN
