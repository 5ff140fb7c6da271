"""Chapter 6's exercise checks: they pass the references, and reject stubs and plausible wrong answers."""

import math
from fractions import Fraction

import numpy as np
import pytest

from albert_mini.book.exercises import (
    ExerciseFailed,
    ch06,
    check_apply_80_10_10,
    check_ngram_probabilities,
    check_prediction_budget,
    check_sample_span_length,
)
from albert_mini.specials import IGNORE_INDEX
from albert_mini.text.masking import Masker


def not_written(*args):
    raise NotImplementedError("write your solution here")


# ------------------------------------------------------------------ learner-style answers written independently
def harmonic_probabilities(max_n):
    weights = [Fraction(1, n) for n in range(1, max_n + 1)]
    return [float(w / sum(weights)) for w in weights]


def choice_sampler(rng, max_n=3):
    return int(rng.choice(np.arange(1, max_n + 1), p=harmonic_probabilities(max_n)))


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


# ------------------------------------------------------------------ the references agree with closed forms
def test_ngram_reference_is_six_three_two_elevenths():
    np.testing.assert_allclose(ch06.ngram_probabilities(3), [6 / 11, 3 / 11, 2 / 11], rtol=1e-12)
    for max_n in (1, 2, 5, 10):
        np.testing.assert_allclose(ch06.ngram_probabilities(max_n), harmonic_probabilities(max_n), rtol=1e-12)


def test_budget_reference_matches_the_closed_form():
    assert [ch06.prediction_budget(n) for n in (1, 3, 10, 100, 128, 132, 133, 136, 137, 512)] == \
        [1, 1, 2, 15, 19, 20, 20, 20, 20, 20]
    assert ch06.prediction_budget(512, max_predictions=1000) == 77  # 15% of 512 without the cap
    assert math.isclose(20 / 512, 0.039, abs_tol=5e-4)  # the reference's cap masks 3.9% of 512 tokens


def test_80_10_10_reference_agrees_with_the_package_masker():
    """The chapter's per-token rule, measured on the package's Masker: neighbours in a span decided independently."""
    word_start = np.ones(1000, dtype=bool)
    word_start[500:] = False  # ids 500.. continue a word, so the masker builds multi-token spans
    masker = Masker(word_start, special_ids=[0, 1, 2, 3, 4], mask_id=4, ngram=3)
    rng = np.random.default_rng(0)
    make = np.random.default_rng(1)
    same = pairs = 0
    for _ in range(1500):
        tokens = np.where(make.random(120) < 0.4, make.integers(500, 1000, 120), make.integers(5, 500, 120))
        tokens[0] = 5
        out = masker(tokens, rng)
        for span in out.spans:
            kind = np.where(out.input_ids[span.start:span.end] == 4, 0,
                            np.where(out.input_ids[span.start:span.end] == tokens[span.start:span.end], 2, 1))
            same += np.count_nonzero(kind[:-1] == kind[1:])
            pairs += span.end - span.start - 1
        assert not np.any((out.input_ids != tokens) & (out.labels == IGNORE_INDEX))  # only predicted tokens change
    assert pairs > 5000
    assert abs(same / pairs - 0.66) < 0.02


# ------------------------------------------------------------------ the checks accept right answers
def test_checks_pass_on_references_and_independent_answers(capsys):
    assert check_ngram_probabilities(ch06.ngram_probabilities)
    assert check_ngram_probabilities(harmonic_probabilities)  # a list is as good as an array
    assert check_sample_span_length(choice_sampler)
    assert check_prediction_budget(ch06.prediction_budget)
    assert check_prediction_budget(budget_by_hand)
    assert check_apply_80_10_10(ch06.apply_80_10_10)
    assert check_apply_80_10_10(corrupt_with_loop)
    assert "agree with the reference" in capsys.readouterr().out


@pytest.mark.parametrize("check", [check_ngram_probabilities, check_sample_span_length, check_prediction_budget,
                                   check_apply_80_10_10])
def test_checks_report_a_stub(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


# ------------------------------------------------------------------ the checks reject plausible mistakes
@pytest.mark.parametrize("wrong", [
    lambda max_n: [1 / max_n] * max_n,  # uniform
    lambda max_n: [1 / n for n in range(1, max_n + 1)],  # not normalised
    lambda max_n: [n / sum(range(1, max_n + 1)) for n in range(1, max_n + 1)],  # favours longer spans
    lambda max_n: [(1 / n ** 2) / sum(1 / k ** 2 for k in range(1, max_n + 1)) for n in range(1, max_n + 1)],
], ids=["uniform", "unnormalised", "proportional-to-n", "one-over-n-squared"])
def test_ngram_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_ngram_probabilities(wrong)


@pytest.mark.parametrize("wrong", [
    lambda rng, max_n=3: int(rng.integers(1, max_n + 1)),  # n uniformly
    lambda rng, max_n=3: max_n + 1 - choice_sampler(rng, max_n),  # the inverted favor_shorter_ngram bug
], ids=["uniform", "inverted"])
def test_sampling_check_rejects_wrong_distributions(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_sample_span_length(wrong)


def test_sampling_check_rejects_values_out_of_range():
    with pytest.raises(ExerciseFailed, match="between 1 and max_n"):
        check_sample_span_length(lambda rng, max_n=3: choice_sampler(rng, max_n) - 1)  # 0-based n


@pytest.mark.parametrize("wrong", [
    lambda n, cap=20, p=0.15: max(1, round(n * p)),  # no cap
    lambda n, cap=20, p=0.15: min(cap, round(n * p)),  # no floor of one prediction
    lambda n, cap=20, p=0.15: min(cap, max(1, int(n * p))),  # truncates instead of rounding
    lambda n, cap=20, p=0.15: min(cap, max(1, math.ceil(n * p))),  # always rounds up
    lambda n, cap=20, p=0.15: min(cap, max(1, round((n - 3) * p))),  # leaves out [CLS] [SEP] [SEP]
], ids=["no-cap", "no-floor", "truncate", "ceil", "without-specials"])
def test_budget_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_prediction_budget(wrong)


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


@pytest.mark.parametrize("wrong", [per_span, mask_or_random, index_not_id, inclusive_end])
def test_80_10_10_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_apply_80_10_10(wrong)


def test_failure_message_shows_input_but_not_the_reference_code():
    with pytest.raises(ExerciseFailed) as caught:
        check_prediction_budget(lambda n, cap=20, p=0.15: max(1, round(n * p)))
    message = str(caught.value)
    assert "input:" in message and "hint:" in message
    assert "def prediction_budget" not in message and "budget(n_tokens)" not in message


def test_sample_span_length_check_rejects_the_global_numpy_generator():
    """The exercise forbids np.random.*: right frequencies drawn from the global generator still fail."""
    def global_draw(rng, max_n=3):
        weights = 1.0 / np.arange(1, max_n + 1)
        return int(np.random.choice(np.arange(1, max_n + 1), p=weights / weights.sum()))

    state = np.random.get_state()
    with pytest.raises(ExerciseFailed, match="rng you are given"):
        check_sample_span_length(global_draw)
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
               for a, b in zip(state, np.random.get_state())), "the check must leave the global state as it was"
