"""Chapter 6's exercise checks: the references agree with the package, the checks pass right answers, and they
reject stubs, plausible mistakes (each with its own hint) and cheats."""

import functools
import math
import runpy
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from exercise_helpers import (
    AlwaysEqual,
    SneakyInt,
    fails_with,
    gives_nothing_away,
    gives_the_tiers_in_turn,
    grader_passes,
    reports_a_stub,
)

from albert_mini.book.exercises import (
    ch06,
    check_apply_80_10_10,
    check_ngram_probabilities,
    check_prediction_budget,
    check_sample_span_length,
)
from albert_mini.specials import IGNORE_INDEX
from albert_mini.text import masking
from albert_mini.text.masking import Masker, replace_80_10_10

SOLUTIONS = Path(__file__).resolve().parents[2] / "chapters" / "solutions" / "06_ngram_masking.py"

pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


# ------------------------------------------------------------------ learner-style answers written independently
def harmonic_probabilities(max_n):
    weights = [Fraction(1, n) for n in range(1, max_n + 1)]
    return [float(w / sum(weights)) for w in weights]


@functools.cache
def harmonic_law(max_n):
    """harmonic_probabilities(max_n) worked out once: a sampling check draws thousands of spans."""
    return harmonic_probabilities(max_n)


def choice_sampler(rng, max_n=3):
    return int(rng.choice(np.arange(1, max_n + 1), p=harmonic_law(max_n)))


def inverse_cdf_sampler(rng, max_n=3):
    """The right law by another route (one uniform number against the running sum, longest length first): other
    draws than the reference's, so it passes by the test's verdict, not by drawing the same numbers."""
    longest_first = np.cumsum(harmonic_law(max_n)[::-1])
    return max_n - min(int(np.searchsorted(longest_first, rng.random(), side="right")), max_n - 1)


def budget_by_hand(n_tokens, max_predictions=20, masked_lm_prob=0.15):
    return min(max_predictions, max(1, round(n_tokens * masked_lm_prob)))


def corrupt_with_loop(tokens, spans, rng, mask_id, replacement_ids):
    out = tokens.copy()
    for start, end in spans:
        for i in range(start, end):
            u = rng.random()
            if u < 0.8:
                out[i] = mask_id
            elif u < 0.9:
                out[i] = rng.choice(replacement_ids)
    return out


# ------------------------------------------------------------------ the references agree with the package
def test_ngram_reference_is_the_maskers_law():
    np.testing.assert_allclose(ch06.ngram_probabilities(3), [6 / 11, 3 / 11, 2 / 11], rtol=1e-12)
    for max_n in (1, 2, 3, 5, 10):
        masker = Masker(np.ones(8, dtype=bool), special_ids=[0, 4], mask_id=4, ngram=max_n)
        np.testing.assert_allclose(ch06.ngram_probabilities(max_n), masker.ngram_probs, rtol=1e-12)
        np.testing.assert_allclose(ch06.ngram_probabilities(max_n), harmonic_probabilities(max_n), rtol=1e-12)


def test_budget_reference_is_the_packages_rule():
    for n in range(1, 600, 7):
        for cap, prob in ((20, 0.15), (80, 0.15), (20, 0.5), (5, 0.3)):
            assert ch06.prediction_budget(n, cap, prob) == masking.prediction_budget(n, prob, cap)
    assert [ch06.prediction_budget(n) for n in (1, 3, 10, 100, 128, 132, 133, 512)] == [1, 1, 2, 15, 19, 20, 20, 20]
    assert ch06.prediction_budget(512, max_predictions=1000) == 77  # 15% of 512 without the cap


def test_80_10_10_reference_draws_as_the_package_does():
    """The same draws from one seed: the reference is replace_80_10_10 on the spans' positions."""
    positions = np.array([i for start, end in ch06._SPANS for i in range(start, end)])
    mine = ch06.apply_80_10_10(ch06._TOKENS, ch06._SPANS, np.random.default_rng(3), 4, ch06._POOL)
    theirs = replace_80_10_10(ch06._TOKENS, positions, np.random.default_rng(3), 4, ch06._POOL)
    np.testing.assert_array_equal(mine, theirs)


def test_the_packages_masker_decides_each_token_of_a_span_on_its_own():
    """The chapter's per-token rule, measured on the package's Masker: neighbours in a span decided independently."""
    word_start = np.ones(1000, dtype=bool)
    word_start[500:] = False  # ids 500.. continue a word, so the masker builds multi-token spans
    masker = Masker(word_start, special_ids=[0, 1, 2, 3, 4], mask_id=4, ngram=3)
    rng, make = np.random.default_rng(0), np.random.default_rng(1)
    same = pairs = 0
    for _ in range(1500):
        tokens = np.where(make.random(120) < 0.4, make.integers(500, 1000, 120), make.integers(5, 500, 120))
        tokens[0] = 5
        out = masker(tokens, rng)
        for span in out.spans:
            shown, kept = out.input_ids[span.start:span.end], tokens[span.start:span.end]
            kind = np.where(shown == 4, 0, np.where(shown == kept, 2, 1))
            same += np.count_nonzero(kind[:-1] == kind[1:])
            pairs += span.end - span.start - 1
        assert not np.any((out.input_ids != tokens) & (out.labels == IGNORE_INDEX))  # only predicted tokens change
    assert pairs > 5000 and abs(same / pairs - 0.66) < 0.02


# ------------------------------------------------------------------ the checks pass right answers
@pytest.fixture(scope="module")
def solutions():
    """The worked solutions' names, the file run top to bottom (it asserts each check itself)."""
    return runpy.run_path(str(SOLUTIONS))


# One test per exercise and answer: the masking check alone calls its answer 2,000 times.
@pytest.mark.parametrize("source", ["solution", "reference"])
@pytest.mark.parametrize("exercise", ch06.EXERCISES, ids=lambda exercise: exercise.name)
def test_checks_pass_the_solutions_and_the_references(solutions, exercise, source):
    answer = solutions[exercise.name] if source == "solution" else getattr(ch06, exercise.name)
    assert exercise.check(answer) is True, exercise.name


@pytest.mark.parametrize("check, answer", [
    (check_ngram_probabilities, harmonic_probabilities),  # a list is as good as an array
    (check_prediction_budget, budget_by_hand), (check_apply_80_10_10, corrupt_with_loop),
    (check_sample_span_length, choice_sampler),  # choice_sampler: also the grader's test below
    (check_sample_span_length, inverse_cdf_sampler)], ids=lambda x: x.__name__)
def test_checks_pass_independent_answers(check, answer, capsys):
    assert check(answer) is True
    assert "Well done!" in capsys.readouterr().out


@pytest.mark.parametrize("exercise, answer", [
    (ch06.NGRAM, harmonic_probabilities), (ch06.SAMPLE, choice_sampler), (ch06.BUDGET, budget_by_hand),
    (ch06.SAMPLE, inverse_cdf_sampler), (ch06.MASKING, corrupt_with_loop)], ids=lambda x: getattr(x, "name", ""))
@pytest.mark.parametrize("seed", [11, 12])  # one test a seed: the masking check calls its answer 2,000 times
def test_the_grader_passes_right_answers_on_cases_drawn_at_grading_time(exercise, answer, seed):
    grader_passes(exercise, answer, (seed,))


@pytest.mark.parametrize("check", [check_ngram_probabilities, check_sample_span_length, check_prediction_budget,
                                   check_apply_80_10_10])
def test_checks_report_a_stub(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ Exercise 1: mistakes and their hints
@pytest.mark.parametrize("wrong, hint", [
    (lambda max_n: [1 / n for n in range(1, max_n + 1)], "these are the weights, not yet probabilities"),
    (lambda max_n: [1 / max_n] * max_n, "every length gets the same probability"),
    (lambda max_n: [n / sum(range(1, max_n + 1)) for n in range(1, max_n + 1)], "grow with n"),
    (lambda max_n: harmonic_probabilities(max_n + 1), "one probability per length"),
    (lambda max_n: [(1 / n ** 2) / sum(1 / k ** 2 for k in range(1, max_n + 1)) for n in range(1, max_n + 1)],
     "revisit what \"proportional to 1/n\" leaves open"),  # no targeted hint: the first tier
], ids=["weights", "uniform", "proportional-to-n", "one-too-many", "one-over-n-squared"])
def test_ngram_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_ngram_probabilities, wrong, capsys, "different answer", "input:", "hint:", hint)


def test_ngram_check_names_a_wrong_kind_of_answer(capsys):
    fails_with(check_ngram_probabilities, lambda max_n: {n: 1 / n for n in range(1, max_n + 1)}, capsys,
               "return a list (or array) of probabilities")


# ------------------------------------------------------------------ Exercise 2
def global_draw(rng, max_n=3):
    """The right law from numpy's global generator, which the exercise forbids."""
    weights = 1.0 / np.arange(1, max_n + 1)
    return int(np.random.choice(np.arange(1, max_n + 1), p=weights / weights.sum()))


def test_sampling_check_rejects_the_global_generator_and_leaves_its_state(capsys):
    state = np.random.get_state()
    fails_with(check_sample_span_length, global_draw, capsys, "global seed", "rng you are given")
    after = np.random.get_state()
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(state, after))


def test_sampling_check_rejects_pythons_random_module(capsys):
    import random

    fails_with(check_sample_span_length,
               lambda rng, max_n=3: random.choices(range(1, max_n + 1), harmonic_probabilities(max_n))[0],
               capsys, "global seed")


@pytest.mark.parametrize("wrong, hint", [
    (lambda rng, max_n=3: int(rng.integers(1, max_n + 1)), "about equally often"),
    (lambda rng, max_n=3: max_n + 1 - choice_sampler(rng, max_n), "favour long spans"),
], ids=["uniform", "inverted"])
def test_sampling_check_rejects_wrong_laws_with_their_hint(wrong, hint, capsys):
    fails_with(check_sample_span_length, wrong, capsys, "different answer", "hint:", hint)


def test_sampling_check_names_a_zero_based_length_and_a_numpy_integer(capsys):
    fails_with(check_sample_span_length, lambda rng, max_n=3: choice_sampler(rng, max_n) - 1, capsys,
               "from 1 to max_n")
    fails_with(check_sample_span_length, lambda rng, max_n=3: np.int64(choice_sampler(rng, max_n)), capsys,
               "return a Python int")


# ------------------------------------------------------------------ Exercise 3
@pytest.mark.parametrize("wrong, hint", [
    (lambda n, cap=20, p=0.15: max(1, round(n * p)), "the cap is a ceiling"),
    (lambda n, cap=20, p=0.15: min(cap, round(n * p)), "at least one token"),
    (lambda n, cap=20, p=0.15: min(cap, max(1, int(n * p))), "rounded down"),
    (lambda n, cap=20, p=0.15: min(cap, max(1, math.ceil(n * p))), "rounded up"),
    (lambda n, cap=20, p=0.15: min(cap, max(1, math.floor(n * p + 0.5))), "a half went up"),
    (lambda n, cap=20, p=0.15: min(cap, max(1, round((n - 3) * p))), "already counts [CLS]"),
], ids=["no-cap", "no-floor", "truncate", "ceil", "half-up", "without-specials"])
def test_budget_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_prediction_budget, wrong, capsys, "different answer", "input:", "hint:", hint)


def test_budget_check_asks_for_a_python_int(capsys):
    fails_with(check_prediction_budget, lambda n, cap=20, p=0.15: np.int64(budget_by_hand(n, cap, p)), capsys,
               "return a Python int")
    fails_with(check_prediction_budget, lambda n, cap=20, p=0.15: float(budget_by_hand(n, cap, p)), capsys,
               "return a Python int")


# ------------------------------------------------------------------ Exercise 4
def per_span(tokens, spans, rng, mask_id, replacement_ids):
    """Decides 80/10/10 once per span (SpanBERT's rule), not per token."""
    out = tokens.copy()
    for start, end in spans:
        u = rng.random()
        if u < 0.8:
            out[start:end] = mask_id
        elif u < 0.9:
            out[start:end] = rng.choice(replacement_ids, size=end - start)
    return out


def mask_or_random(tokens, spans, rng, mask_id, replacement_ids):
    """80% [MASK], 20% random: forgets that 10% stay unchanged."""
    out = tokens.copy()
    for start, end in spans:
        for i in range(start, end):
            out[i] = mask_id if rng.random() < 0.8 else rng.choice(replacement_ids)
    return out


def index_not_id(tokens, spans, rng, mask_id, replacement_ids):
    """Uses a random index into replacement_ids as the replacement id."""
    out = tokens.copy()
    for start, end in spans:
        for i in range(start, end):
            u = rng.random()
            out[i] = mask_id if u < 0.8 else (rng.integers(len(replacement_ids)) if u < 0.9 else out[i])
    return out


def inclusive_end(tokens, spans, rng, mask_id, replacement_ids):
    """Treats a span (start, end) as including `end`."""
    return ch06.apply_80_10_10(tokens, [(s, e + 1) for s, e in spans], rng, mask_id, replacement_ids)


def in_place(tokens, spans, rng, mask_id, replacement_ids):
    """The right frequencies, written into the caller's array."""
    out = corrupt_with_loop(tokens, spans, rng, mask_id, replacement_ids)
    tokens[:] = out
    return tokens


@pytest.mark.parametrize("wrong, hint", [
    (per_span, "decide for every token on its own"), (mask_or_random, "no token stays as it was"),
    (index_not_id, "not a position in it"), (inclusive_end, "stops before `end`"),
])
def test_80_10_10_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_apply_80_10_10, wrong, capsys, "different answer", "hint:", hint)


@pytest.mark.parametrize("wrong, hint", [
    (in_place, "changed input 1 in place"),
    (lambda tokens, spans, rng, mask_id, ids: tokens, "returned input 1 itself"),
    (lambda t, s, rng, m, ids: corrupt_with_loop(t, s, rng, m, ids).tolist(), "the text asks for a new numpy array"),
], ids=["in-place", "same-array", "list"])
def test_80_10_10_check_wants_a_new_array(wrong, hint, capsys):
    fails_with(check_apply_80_10_10, wrong, capsys, hint)


# ------------------------------------------------------------------ cheats
@pytest.mark.parametrize("check, cheat", [
    (check_ngram_probabilities, lambda max_n: AlwaysEqual()),
    (check_prediction_budget, lambda n, cap=20, p=0.15: AlwaysEqual()),
    (check_prediction_budget, lambda n, cap=20, p=0.15: SneakyInt(budget_by_hand(n, cap, p) + 1)),
    (check_sample_span_length, lambda rng, max_n=3: SneakyInt(choice_sampler(rng, max_n))),
], ids=["eq-probabilities", "eq-budget", "int-subclass-budget", "int-subclass-draw"])
def test_checks_reject_objects_that_claim_to_be_equal(check, cheat, capsys):
    fails_with(check, cheat, capsys)


def masker_probabilities(max_n):
    return Masker(np.ones(8, dtype=bool), special_ids=[0, 4], mask_id=4, ngram=max_n).ngram_probs


@pytest.mark.parametrize("check, cheat", [
    (check_ngram_probabilities, masker_probabilities),
    (check_sample_span_length,
     lambda rng, max_n=3: int(rng.choice(np.arange(1, max_n + 1), p=masker_probabilities(max_n)))),
    (check_prediction_budget, lambda n, cap=20, p=0.15: masking.prediction_budget(n, p, cap)),
    (check_prediction_budget, lambda n, cap=20, p=0.15: Masker(
        np.ones(8, dtype=bool), special_ids=[0, 4], mask_id=4, masked_lm_prob=p, max_predictions=cap).budget(n)),
    (check_apply_80_10_10, lambda tokens, spans, rng, mask_id, ids: replace_80_10_10(
        tokens, np.array([i for s, e in spans for i in range(s, e)]), rng, mask_id, ids)),
], ids=["masker-probs", "masker-probs-in-sampler", "package-budget", "masker-budget", "package-80-10-10"])
def test_the_packages_own_answer_is_switched_off(check, cheat, capsys):
    fails_with(check, cheat, capsys, "switched off while your function is checked")
    assert masking.prediction_budget(128) == 19 and Masker.__init__.__code__.co_name == "__init__"  # put back


# ------------------------------------------------------------------ hints teach, they do not answer
KEY_EXPRESSIONS = {  # what would hand over each solution, in the forms a hint could spell it
    "ngram_probabilities": ["weights.sum", "/ sum", "6/11", "11/6", "np.arange"],
    "sample_span_length": ["rng.choice", "p=", "np.arange", "weights"],
    "prediction_budget": ["min(", "max(", "round(", "0.15 *", "* n"],
    "apply_80_10_10": ["rng.random", "< 0.8", "< 0.9", "u <", "rng.integers", "copy("],
}


@pytest.mark.parametrize("exercise", ch06.EXERCISES, ids=lambda e: e.name)
def test_no_hint_spells_out_the_solution(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


def test_later_tries_get_narrower_hints_then_the_solutions_file(capsys):
    cubed = lambda max_n: [(1 / n ** 3) / sum(1 / k ** 3 for k in range(1, max_n + 1))  # noqa: E731
                           for n in range(1, max_n + 1)]
    gives_the_tiers_in_turn(check_ngram_probabilities, cubed, ch06.NGRAM, capsys)
