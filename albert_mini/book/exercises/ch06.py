"""Checks for Chapter 6 (n-gram masking): p(n), sampling a span length, the prediction budget, 80/10/10."""

from __future__ import annotations

import random

import numpy as np

from ...specials import MASK_ID, PAD_ID
from ...text.masking import Masker, replace_80_10_10
from ...text.masking import prediction_budget as package_budget
from .checking import ExerciseFailed, check_against_reference


def _masker(**options) -> Masker:
    """A Masker over a toy vocabulary, only to ask it for its probabilities and budgets."""
    return Masker(np.ones(8, dtype=bool), special_ids=[PAD_ID, MASK_ID], mask_id=MASK_ID, **options)


# ------------------------------------------------------------------------------------------- references
def ngram_probabilities(max_n: int) -> np.ndarray:
    """p(n) for n = 1..max_n, proportional to 1/n (the package's Masker computes the same)."""
    return _masker(ngram=max_n).ngram_probs


def prediction_budget(n_tokens: int, max_predictions: int = 20, masked_lm_prob: float = 0.15) -> int:
    """min(max_predictions, max(1, round(masked_lm_prob * n_tokens))): the package's rule, in the chapter's order."""
    return package_budget(n_tokens, masked_lm_prob, max_predictions)


def apply_80_10_10(tokens: np.ndarray, spans, rng: np.random.Generator, mask_id: int,
                   replacement_ids: np.ndarray) -> np.ndarray:
    """Per token inside the spans: [MASK] with p 0.8, a random id from replacement_ids with 0.1, else unchanged."""
    positions = np.array([i for start, end in spans for i in range(start, end)], dtype=np.int64)
    return replace_80_10_10(tokens, positions, rng, mask_id, np.asarray(replacement_ids))


# ------------------------------------------------------------------------------------------- p(n)
def check_ngram_probabilities(fn) -> bool:
    """Check `fn(max_n)` returns [p(1), ..., p(max_n)] with p(n) proportional to 1/n."""
    cases = [((n,), {}) for n in (3, 1, 2, 4, 5, 10)]
    return check_against_reference(
        "ngram_probabilities", fn, ngram_probabilities, cases,
        hint="weight n by 1/n, then divide every weight by the sum of the weights so that they add up to 1 "
             "(for max_n = 3 the answer is 6/11, 3/11, 2/11).",
    )


# ------------------------------------------------------------------------------------------- sampling n
_DRAWS = 10_000  # the standard error of a frequency is at most 0.005: a tolerance of 0.02 is four of them


def _frequencies(fn, max_n: int, seed: int) -> np.ndarray:
    """How often fn(rng, max_n) returned 1..max_n in _DRAWS calls with one seeded Generator."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(max_n)
    for _ in range(_DRAWS):
        n = fn(rng, max_n)
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or not 1 <= n <= max_n:
            raise ValueError(f"returned {n!r}; a span length must be an int between 1 and max_n = {max_n}")
        counts[n - 1] += 1
    return counts / _DRAWS


def _draws_depend_on_more_than_the_rng(fn) -> bool:
    """Whether fn(rng, 3) draws differently from one seeded rng when only the global generators change."""
    numpy_state, python_state = np.random.get_state(), random.getstate()
    runs = []
    try:
        for global_seed in (1, 2):
            np.random.seed(global_seed)
            random.seed(global_seed)
            rng = np.random.default_rng(0)
            runs.append([int(fn(rng, 3)) for _ in range(200)])
    except Exception:  # a function that fails is reported with its input by the frequency check
        return False
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)
    return runs[0] != runs[1]


def check_sample_span_length(fn) -> bool:
    """Check that `fn(rng, max_n)` draws n with the frequencies p(n) proportional to 1/n (10,000 seeded draws),
    using only the generator it is given."""
    if _draws_depend_on_more_than_the_rng(fn):
        raise ExerciseFailed(
            "sample_span_length: with the same rng, your draws changed when only the global seed changed, so "
            "they come from np.random.* (or Python's random) instead of the rng you are given. Draw with "
            "`rng` only (e.g. rng.choice), so that its seed fixes the result.")
    cases = [((max_n, seed), {}) for max_n, seed in ((3, 0), (2, 1), (1, 2), (5, 3))]
    return check_against_reference(
        "sample_span_length (frequencies of n = 1..max_n over 10,000 draws)",
        lambda max_n, seed: _frequencies(fn, max_n, seed), lambda max_n, seed: ngram_probabilities(max_n), cases,
        rtol=0.0, atol=0.02,
        hint="draw from the distribution of the previous exercise, not uniformly: e.g. rng.choice over "
             "1..max_n with p = the normalised 1/n weights; use only the rng you are given.",
    )


# ------------------------------------------------------------------------------------------- budget
def check_prediction_budget(fn) -> bool:
    """Check `fn(n_tokens, max_predictions, masked_lm_prob)` against the reference's budget rule."""
    rng = np.random.default_rng(6)
    fixed = [(128, 20, 0.15), (512, 20, 0.15), (3, 20, 0.15), (1, 20, 0.15), (133, 20, 0.15), (137, 20, 0.15),
             (100, 20, 0.15), (256, 80, 0.15), (7, 20, 0.5), (5, 20, 0.5), (64, 20, 0.2), (512, 76, 0.15)]
    random = [(int(rng.integers(1, 1024)), int(rng.integers(1, 100)), float(rng.choice([0.1, 0.15, 0.2, 0.3])))
              for _ in range(12)]
    cases = [((n, cap, prob), {}) for n, cap, prob in fixed + random]
    return check_against_reference(
        "prediction_budget", fn, prediction_budget, cases,
        hint="start from masked_lm_prob * n_tokens rounded with Python's round(); predict at least one token; "
             "and never more than max_predictions.",
    )


# ------------------------------------------------------------------------------------------- 80/10/10
_TRIALS = 2000
# A 40-token sequence with spans of 1, 2 and 3 tokens; the pool of replacement ids starts at 500 so that an
# index into it is not itself a valid replacement id.
_TOKENS = np.arange(100, 140, dtype=np.int64)
_SPANS = [(2, 3), (5, 7), (10, 13), (20, 22), (30, 31), (34, 37)]
_POOL = np.arange(500, 1000, dtype=np.int64)


def _treatment_stats(fn, mask_id: int, seed: int) -> dict[str, float]:
    """Frequencies of what fn does inside and outside the spans over _TRIALS seeded calls."""
    rng = np.random.default_rng(seed)
    inside = np.zeros(len(_TOKENS), dtype=bool)
    for start, end in _SPANS:
        inside[start:end] = True
    pairs = np.array([(i, i + 1) for start, end in _SPANS for i in range(start, end - 1)])  # neighbours in a span
    counts = dict.fromkeys(("mask", "random", "kept", "outside_changed", "outside_pool", "pair_same"), 0)
    for _ in range(_TRIALS):
        out = np.asarray(fn(_TOKENS.copy(), list(_SPANS), rng, mask_id, _POOL.copy()))
        if out.shape != _TOKENS.shape:
            raise ValueError(f"returned shape {out.shape}; return the whole sequence, shape {_TOKENS.shape}")
        kind = np.where(out == mask_id, 0, np.where(out == _TOKENS, 2, 1))  # 0 [MASK], 1 random, 2 kept
        counts["mask"] += np.count_nonzero(kind[inside] == 0)
        counts["random"] += np.count_nonzero(kind[inside] == 1)
        counts["kept"] += np.count_nonzero(kind[inside] == 2)
        counts["outside_changed"] += np.count_nonzero(out[~inside] != _TOKENS[~inside])
        counts["outside_pool"] += np.count_nonzero(~np.isin(out[inside][kind[inside] == 1], _POOL))
        counts["pair_same"] += np.count_nonzero(kind[pairs[:, 0]] == kind[pairs[:, 1]])
    n_inside = _TRIALS * inside.sum()
    return {"[MASK]": counts["mask"] / n_inside, "random": counts["random"] / n_inside,
            "unchanged": counts["kept"] / n_inside,
            "same choice for two neighbours in a span": counts["pair_same"] / (_TRIALS * len(pairs)),
            "changed tokens outside the spans": float(counts["outside_changed"]),
            "random ids not from replacement_ids": float(counts["outside_pool"])}


def _expected_stats(mask_id: int, seed: int) -> dict[str, float]:
    """The closed form: 0.8 / 0.1 / 0.1 per token, independent neighbours, nothing else touched."""
    return {"[MASK]": 0.8, "random": 0.1, "unchanged": 0.1,
            "same choice for two neighbours in a span": 0.8 ** 2 + 0.1 ** 2 + 0.1 ** 2,
            "changed tokens outside the spans": 0.0, "random ids not from replacement_ids": 0.0}


def check_apply_80_10_10(fn) -> bool:
    """Check `fn(tokens, spans, rng, mask_id, replacement_ids)` statistically over 2,000 seeded calls."""
    cases = [((4, 0), {}), ((7, 1), {})]

    def learner(mask_id, seed):
        return _treatment_stats(fn, mask_id, seed)

    def compare(got, expected):
        exact = ("changed tokens outside the spans", "random ids not from replacement_ids")
        return all(got[k] == expected[k] if k in exact else abs(got[k] - expected[k]) <= 0.02 for k in expected)

    return check_against_reference(
        "apply_80_10_10 (frequencies over 2,000 calls, keyed by mask_id and seed)", learner, _expected_stats,
        cases, compare=compare,
        hint="draw one uniform number per token inside the spans (not one per span): below 0.8 -> mask_id, "
             "0.8-0.9 -> a random element of replacement_ids, otherwise leave the token; touch nothing else.",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "ngram_probabilities": [Masker.__init__],
    "sample_span_length": [ngram_probabilities],
    "prediction_budget": [package_budget],
    "apply_80_10_10": [apply_80_10_10, replace_80_10_10],
}
# p(1..3) for N = 3 (6/11, 3/11, 2/11): printed before Exercise 1, they would give its answer away.
KEY_NUMBERS: dict[str, list] = {"ngram_probabilities": [6 / 11, 3 / 11, 2 / 11]}
