"""Supervised SOP and NSP from one encoder at equal budgets: its committed fast result, and the plan's rules."""

import pytest
from fast_results import TEST_SEEDS, fast_result

from albert_mini.harness.experiments import sop_supervised
from albert_mini.harness.experiments.trunk import FAST_TRUNK, scored_pairs


@pytest.fixture(scope="module")
def result():
    return fast_result("sop_supervised")


def test_each_arm_is_read_on_both_tasks_on_the_same_pairs_with_its_strata(result):
    assert result["seeds"] == list(TEST_SEEDS) and set(result["arms"]) == {"sop", "nsp"}
    steps = sop_supervised.FAST_SUPERVISION.score_at
    for arm in ("sop", "nsp"):
        assert sorted(result["arms"][arm]) == [str(s) for s in TEST_SEEDS]
        for record in result["arms"][arm].values():
            assert [p["step"] for p in record["points"]] == list(steps)
            for task in ("sop", "nsp"):
                pairs = len(scored_pairs(task, "held_out", 64, False, FAST_TRUNK)[1])
                score = record["points"][-1][task]
                assert score["all"]["pairs"] == pairs == score["quote"]["pairs"] + score["no_quote"]["pairs"]
    assert set(result["predictions"]) == {"U1", "U2", "U3", "U4"}
    assert {"majority", "surface_regression"} <= set(result["floors"]["sop"])
    assert "topic_regression" in result["floors"]["nsp"]


def arms_with(nsp_on_nsp_low, sop_quote_free, nsp_on_sop, sop_on_nsp_quote_free):
    def score(accuracy, low=0.0):
        return {"accuracy": accuracy, "wilson": [low, accuracy + 0.02]}

    def point(sop, nsp):
        return {"points": [{"step": 600, "sop": sop, "nsp": nsp}]}

    return {"nsp": {"0": point({"all": score(nsp_on_sop)}, {"all": score(0.6, nsp_on_nsp_low)})},
            "sop": {"0": point({"all": score(0.52), "no_quote": score(sop_quote_free)},
                               {"all": score(0.55), "no_quote": score(sop_on_nsp_quote_free)})}}


def test_the_predictions_read_the_plan_as_written():
    verdict = sop_supervised.predictions(arms_with(0.55, 0.50, 0.50, 0.49))
    assert all(v["holds"] for v in verdict.values())
    verdict = sop_supervised.predictions(arms_with(0.50, 0.55, 0.56, 0.55))  # every bound just missed
    assert not any(v["holds"] for v in verdict.values())
    assert sop_supervised.predictions(arms_with(0.55, 0.50, 0.44, 0.49))["U3"]["per_seed"] == {"0": False}
