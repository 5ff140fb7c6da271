"""The statistics of the experiments against hand-computed values and closed forms (no scipy)."""

import math

import numpy as np
import pytest

from albert_mini.study import stats


def test_mcnemar_exact_matches_the_binomial_formula():
    # b = 1, c = 5: p = 2 * P(X <= 1), X ~ Bin(6, 1/2) = 2 * (1 + 6) / 64 = 0.21875.
    assert stats.mcnemar_exact(1, 5) == pytest.approx(14 / 64)
    assert stats.mcnemar_exact(5, 1) == stats.mcnemar_exact(1, 5)  # symmetric
    # b = 0, c = 10: 2 / 1024.
    assert stats.mcnemar_exact(0, 10) == pytest.approx(2 / 1024)
    # Equal counts: twice a tail that holds the middle term exceeds 1, so the p-value is capped at 1.
    assert stats.mcnemar_exact(3, 3) == 1.0 and stats.mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError, match="discordant counts"):
        stats.mcnemar_exact(-1, 2)


def test_wilson_interval_matches_the_formula():
    # 80 of 100: centre (0.8 + z^2/200) / (1 + z^2/100), half-width z/(1 + z^2/100) sqrt(0.0016 + z^2/40000).
    z = 1.959964
    centre = (0.8 + z * z / 200) / (1 + z * z / 100)
    half = z / (1 + z * z / 100) * math.sqrt(0.8 * 0.2 / 100 + z * z / 40000)
    lo, hi = stats.wilson_interval(80, 100)
    assert (lo, hi) == pytest.approx((centre - half, centre + half))
    assert (lo, hi) == pytest.approx((0.7112, 0.8666), abs=1e-4)  # the textbook value
    lo, hi = stats.wilson_interval(50, 100)  # 0.5 +- z/(1 + z^2/100) sqrt(0.0025 + z^2/40000)
    assert (round(lo, 4), round(hi, 4)) == (0.4038, 0.5962)
    lo0, hi0 = stats.wilson_interval(0, 10)  # never below 0, and not a zero-width interval
    assert lo0 == 0.0 and hi0 == pytest.approx(0.2775, abs=1e-4)
    with pytest.raises(ValueError):
        stats.wilson_interval(11, 10)


def test_seed_summary_is_mean_sample_std_and_t_interval():
    summary = stats.seed_summary([0.50, 0.53, 0.56])
    assert summary["mean"] == pytest.approx(0.53) and summary["std"] == pytest.approx(0.03)  # n - 1 in the std
    half = 4.303 * 0.03 / math.sqrt(3)  # t with 2 degrees of freedom
    assert summary["ci95"] == pytest.approx([0.53 - half, 0.53 + half])
    one = stats.seed_summary([0.4])
    assert one["std"] is None and one["ci95"] is None and one["n"] == 1
    with pytest.raises(ValueError, match="no values"):
        stats.seed_summary([])


def test_t_critical_table_and_series_agree_with_known_quantiles():
    assert stats.t_critical(1) == 12.706 and stats.t_critical(2) == 4.303
    assert stats.t_critical(40) == pytest.approx(2.0211, abs=1e-3)
    assert stats.t_critical(120) == pytest.approx(1.9799, abs=1e-3)
    with pytest.raises(ValueError, match="at least 2 values"):
        stats.t_critical(0)


def test_discordant_pairs_are_counted_seed_by_seed():
    a = ["1100", "1010"]
    b = ["1001", "0011"]
    # seed 0: only A at index 1, only B at 3; seed 1: only A at 0, only B at 3.
    assert stats.discordant(a, b) == (2, 2)
    with pytest.raises(ValueError, match="same examples"):
        stats.discordant("101", "10")


def test_paired_bootstrap_centres_on_the_difference_and_sees_pairing():
    rng = np.random.default_rng(0)
    b = rng.integers(0, 2, 400)
    a = b.copy()
    a[:40] = 1  # A gets every one of the first 40 right, otherwise agrees with B
    result = stats.paired_bootstrap(a, b, seed=1)
    gain = (a - b).mean()
    assert result["difference"] == pytest.approx(gain)
    lo, hi = result["ci95"]
    assert 0 < lo < gain < hi  # the pairing makes a gain of a few points clearly positive
    same = stats.paired_bootstrap(b, b)
    assert same["difference"] == 0 and same["ci95"] == [0.0, 0.0]  # identical models: no spread at all
    compared = stats.compare_paired(a, b)
    assert compared["only_b"] == 0 and compared["only_a"] == int((a != b).sum())
    assert compared["mcnemar_p"] == pytest.approx(2 / 2 ** compared["only_a"])
