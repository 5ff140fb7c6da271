"""The chi-square test that judges a learner's random draws: its survival function against printed tables, its
level and power by simulation, and the sampling check of chapter 6 built on it."""

import numpy as np
import pytest

from albert_mini.book.exercises import ch06
from albert_mini.book.exercises.goodness_of_fit import chi_square, chi_square_sf, critical_value, fits

# Upper percentage points of the chi-square distribution as printed (NIST/SEMATECH e-Handbook of Statistical
# Methods, section 1.3.6.7.4); the 1e-6 points in closed form: one dof is a squared normal (its two-sided 1e-6
# point is 4.89164), two dof an exponential of mean 2 (-2 ln 1e-6).
TABLE = [(1, 0.05, 3.841), (2, 0.05, 5.991), (3, 0.05, 7.815), (4, 0.05, 9.488), (5, 0.05, 11.070),
         (6, 0.05, 12.592), (1, 0.01, 6.635), (3, 0.01, 11.345), (5, 0.01, 15.086), (2, 0.10, 4.605),
         (1, 1e-6, 4.89164 ** 2), (2, 1e-6, -2 * np.log(1e-6))]


@pytest.mark.parametrize("dof, alpha, x", TABLE)
def test_survival_function_and_critical_value_match_the_printed_tables(dof, alpha, x):
    assert chi_square_sf(x, dof) == pytest.approx(alpha, rel=2e-3)
    assert critical_value(alpha, dof) == pytest.approx(x, abs=1e-3)


def test_survival_function_edges():
    assert chi_square_sf(0.0, 3) == 1.0 and chi_square_sf(-1.0, 2) == 1.0
    assert chi_square_sf(2.0, 2) == pytest.approx(np.exp(-1.0))  # two dof: an exponential of mean 2
    with pytest.raises(ValueError, match="positive whole number"):
        chi_square_sf(1.0, 0)


def test_fits_refuses_impossible_counts_and_keeps_a_certain_law():
    assert fits([10], [1.0], 1e-6) and not fits([0], [1.0], 1e-6)
    assert not fits([5, 5, 1], [0.5, 0.5, 0.0], 1e-6)  # a length the law never draws came out
    assert fits([5, 5, 0], [0.5, 0.5, 0.0], 1e-6) and not fits([5, 5], [0.5, 0.3, 0.2], 1e-6)


def test_the_level_holds_by_simulation():
    """Samples drawn from the law itself are rejected about as often as the level says."""
    law = ch06.ngram_probabilities(4)
    samples = np.random.default_rng(0).multinomial(1000, law, size=40_000)
    rejected = np.mean(chi_square(samples, law) > critical_value(0.01, 3))
    assert 0.008 < rejected < 0.012


@pytest.mark.parametrize("max_n", [2, 3, 4, 5, 6])
def test_the_sampling_check_rejects_the_recognised_wrong_laws_and_names_them(max_n):
    """The power written beside the check, in small: 2,000 simulated samples of each wrong law at its number of
    draws are all rejected, and each is recognised as its own mistake."""
    right, threshold = ch06.ngram_probabilities(max_n), critical_value(ch06._ALPHA, max_n - 1)
    rng = np.random.default_rng(max_n)
    for wrong in (np.full(max_n, 1 / max_n), right[::-1]):
        samples = rng.multinomial(ch06._DRAWS, wrong, size=2000)
        assert np.all(chi_square(samples, right) > threshold)  # rejected
        assert np.all(chi_square(samples, wrong) <= threshold)  # and its draws fit the mistaken law
        assert not fits(samples[0], right, ch06._ALPHA) and fits(samples[0], wrong, ch06._ALPHA)


def test_the_sampling_check_calls_the_learners_function_a_few_thousand_times():
    """Its cost: 1,000 draws for each of its six cases, where a per-length tolerance needed 10,000."""
    calls = []

    def counted(rng, max_n=3):
        calls.append(max_n)
        return ch06.sample_span_length(rng, max_n)

    assert ch06.SAMPLE.verdict(counted).passed is True
    assert len(calls) == 6 * ch06._DRAWS == 6000
