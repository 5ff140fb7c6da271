"""Checks for Chapter 6 (n-gram masking): p(n), sampling a span length, the prediction budget, 80/10/10.

Two exercises draw random numbers. Their checks call the learner's function many times with one seeded
Generator (`Case(..., repeat=N)`, the global generators seeded too) and judge the frequencies (`summarize`; for
the span length a chi-square test, its level and power written beside it). For the span length, two cases use
the same Generator seed under two global seeds (`screen`), so an answer that draws from np.random.* or Python's
random, which the text forbids, is named as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...text.masking import Masker, replace_80_10_10
from ...text.masking import prediction_budget as package_budget
from ..answering import Rng
from .checking import Case, Exercise, Mistake, WrongForm, kind_of, python_int
from .goodness_of_fit import chi_square, chi_square_sf, fits

# The package functions that answer an exercise, switched off while the learner's function is checked.
_MASKER_SETUP = "albert_mini.text.masking:Masker.__init__"  # computes Masker.ngram_probs for any ngram
_BUDGET = ("albert_mini.text.masking:prediction_budget", "albert_mini.text.masking:Masker.budget")
_REPLACE = ("albert_mini.text.masking:replace_80_10_10", "albert_mini.text.masking:Masker.__call__")


def _is(variant):
    """A mistake test: the answer is wrong and equals what `variant` computes on the same inputs."""
    return lambda got, expected, args, kwargs: got != expected and got == variant(*args, **kwargs)


def _same_draws(a: list, b: list) -> bool:
    """Whether two cases' answers are the same values, call by call (arrays compared element by element)."""
    return len(a) == len(b) and all(
        type(x) is type(y) and (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y) for x, y in zip(a, b))


def _only_from_rng(cases: list[Case], answers: list) -> str | None:
    """Two cases with the same inputs (one Generator seed) under different global seeds must draw alike."""
    seen: dict[str, list] = {}
    for case, values in zip(cases, answers):
        if case.global_seed is None or not isinstance(values, list):
            continue  # a case that raised is reported with its input by the case-by-case judgement
        key = repr((case.args, sorted(case.kwargs.items()), case.repeat))
        for other_seed, other_values in seen.get(key, []):
            if other_seed != case.global_seed and not _same_draws(other_values, values):
                return ("with the same rng, your draws changed when only the global seed changed, so they come "
                        "from np.random.* (or Python's random) instead of the rng you are given. Draw from `rng` "
                        "alone, so that its seed fixes the result.")
        seen.setdefault(key, []).append((case.global_seed, values))
    return None


# ------------------------------------------------------------------------------------------- Exercise 1: p(n)
# The references are written here, apart from the package's functions (those are switched off while an answer,
# the reference included, is checked); tests/book/test_exercises_ch06.py shows that they agree with the package,
# and tests/book/test_exercises_twins.py compares each word-for-word copy with its original on every case.
def ngram_probabilities(max_n: int) -> np.ndarray:
    """p(n) for n = 1..max_n, proportional to 1/n (the package's Masker.ngram_probs)."""
    weights = 1.0 / np.arange(1, max_n + 1)
    return weights / weights.sum()


def probabilities(value) -> np.ndarray:
    """A 1-d sequence of numbers (list, tuple, array or tensor) as a float array."""
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "biuf":
            raise WrongForm(f"returned an array of shape {value.shape} and dtype {value.dtype}; return one "
                            "probability per length, a 1-d list or array of numbers")
        return value.astype(np.float64)
    if type(value) not in (list, tuple):
        raise WrongForm(f"returned {kind_of(value)}; return a list (or array) of probabilities")
    numbers = []
    for item in value:
        if isinstance(item, np.generic) and item.dtype.kind in "iuf":
            item = item.item()
        if type(item) not in (int, float):
            raise WrongForm(f"the list holds {kind_of(item)}; it should hold numbers")
        numbers.append(float(item))
    return np.array(numbers, dtype=np.float64)


def _weights(max_n: int) -> np.ndarray:
    return 1.0 / np.arange(1, max_n + 1)


NGRAM = Exercise(
    "ngram_probabilities", "06", ngram_probabilities,
    [Case((3,), note="the paper's N = 3"), Case((1,), note="a single length"), Case((2,)), Case((4,)),
     Case((5,)), Case((10,))],
    drawn=lambda rng: [Case((int(rng.integers(1, 40)),)) for _ in range(4)],
    normalize=probabilities, rtol=1e-9, atol=1e-12, unavailable=(_MASKER_SETUP,),
    hints=("revisit what \"proportional to 1/n\" leaves open: the weights say which lengths are likelier, not "
           "yet how likely each one is.",
           "the probabilities of all the lengths must add up to one: check the sum of your answer, and your "
           "answer for max_n = 1."),
    mistakes=(
        Mistake(lambda got, want, args, kw: len(got) != len(want),
                "one probability per length n = 1, ..., max_n, no more and no fewer (mind where a range ends)."),
        Mistake(lambda got, want, args, kw: np.allclose(got, _weights(args[0])),
                "these are the weights, not yet probabilities: probabilities add up to one."),
        Mistake(lambda got, want, args, kw: args[0] > 1 and np.allclose(got, 1 / args[0]),
                "every length gets the same probability here; the law favours short spans."),
        Mistake(lambda got, want, args, kw: args[0] > 1 and bool(np.all(np.diff(got) > 0)),
                "your probabilities grow with n; the law makes the short spans the likelier ones."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 2: draw n
# The test: each case calls the function _DRAWS times with one seeded Generator and counts the lengths 1..max_n;
# Pearson's chi-square goodness-of-fit test against p(n) (max_n - 1 degrees of freedom) keeps the answer unless
# p < _ALPHA. A recognised mistake's hint is given when the counts pass the same test against its law.
# Level: the reference, and any sampler that draws as it does, passes on every run (the cases are seeded); an
# honest sampler that draws other numbers fails a case with probability 1e-6 (asymptotically; 1.2e-6 to 1.7e-6
# simulated with 10^7 multinomial samples per max_n = 2..6), under 1e-5 over the check's five distinct draws.
# Power against the laws the hints recognise, at 1,000 draws: noncentrality lambda = N sum((q - p)^2 / p) is at
# least 125 (uniform, max_n = 2; reversed: 500); the chance of accepting is 1.6e-10 for uniform at max_n = 2 and
# below 1e-21 everywhere else (the noncentral chi-square as a Poisson mixture of chi_square_sf), and 0 of 10^6
# simulated samples per law and max_n = 2..6 was accepted (rng.multinomial, seed 0). The hint names the mistake in
# at least 999,995 of those 10^6. A law the hints do not name, p(n) proportional to 1/n^2, is rejected with
# probability 1 - 2.5e-5 at max_n = 2 and 1 - 1e-12 or better from max_n = 3 (the first case's).
# Ten times fewer draws than a per-length tolerance of 0.02 needed: on one Xeon core at load 4 the check of the
# worked solution takes 0.11-0.15 s instead of 1.15-1.45 s.
_DRAWS = 1_000
_ALPHA = 1e-6


def sample_span_length(rng: np.random.Generator, max_n: int = 3) -> int:
    """One n in 1..max_n with probability proportional to 1/n, drawn from `rng` alone."""
    return int(rng.choice(np.arange(1, max_n + 1), p=ngram_probabilities(max_n)))


def _expected_law(rng, max_n: int = 3) -> np.ndarray:
    """What the draws of a case should follow: the law itself."""
    return ngram_probabilities(max_n)


@dataclass(frozen=True)
class Draws:
    """How often each length 1..max_n came out of a case's draws, and how well that fits p(n)."""

    counts: tuple[int, ...]
    p_value: float

    def __repr__(self) -> str:
        total = sum(self.counts)
        shares = ", ".join(f"{count / total:.3f}" for count in self.counts)
        p = f"{self.p_value:.1e}" if self.p_value > 0 else "below 1e-300"
        return (f"frequencies [{shares}] over {total:,} draws (a chi-square test against p(n) gives p = {p}; "
                f"the check keeps p >= {_ALPHA:g})")


def _counts(values: list, case: Case) -> Draws:
    """How often each length 1..max_n came out; a draw that is not a Python int in range is the wrong form."""
    max_n = case.args[1] if len(case.args) > 1 else case.kwargs.get("max_n", 3)
    counts = np.zeros(max_n, dtype=np.int64)
    for value in values:
        if type(value) is not int:
            python_int(value)  # raises WrongForm naming what came back
        if not 1 <= value <= max_n:
            raise WrongForm(f"one draw returned {value!r}; a span length is a whole number of words from 1 to "
                            f"max_n = {max_n} (count from 1)")
        counts[value - 1] += 1
    p_value = chi_square_sf(float(chi_square(counts, ngram_probabilities(max_n))), max_n - 1) if max_n > 1 else 1.0
    return Draws(tuple(int(c) for c in counts), p_value)


def _fits_law(got: Draws, law: np.ndarray) -> bool:
    return type(got) is Draws and fits(got.counts, law, _ALPHA)


def _sampling_cases(rng_seed: int, max_n: int, global_seed: int, note: str = "") -> Case:
    return Case((Rng(rng_seed), max_n), repeat=_DRAWS, global_seed=global_seed, note=note)


def _drawn_from(target):
    """A mistake test on the counts: they pass the check's test against `target(max_n)` instead of p(n)."""
    return lambda got, want, args, kw: args[1] > 1 and _fits_law(got, target(args[1]))


SAMPLE = Exercise(
    "sample_span_length", "06", _expected_law,
    [_sampling_cases(0, 3, 1, "frequencies of n = 1..3"),
     _sampling_cases(0, 3, 2, "the same rng seed under another global seed"),
     _sampling_cases(1, 2, 1), _sampling_cases(2, 1, 1), _sampling_cases(3, 5, 1)],
    drawn=lambda rng: [_sampling_cases(int(rng.integers(2**31)), int(rng.integers(2, 7)),
                                       int(rng.integers(2**31)))],
    summarize=_counts, compare=_fits_law, screen=_only_from_rng, unavailable=(_MASKER_SETUP,),
    title=f"sample_span_length (frequencies of n = 1..max_n over {_DRAWS:,} draws, a chi-square test)",
    hints=("revisit the law of Exercise 1: how often each length comes out should follow it.",
           "a numpy Generator can draw one value from a list of values with given probabilities; give it the "
           "law for this max_n."),
    mistakes=(
        Mistake(_drawn_from(lambda n: np.full(n, 1 / n)),
                "your lengths come out about equally often: draw them with the probabilities of Exercise 1, "
                "not uniformly."),
        Mistake(_drawn_from(lambda n: ngram_probabilities(n)[::-1]),
                "your draws favour long spans: the probabilities are the wrong way round (the bug of "
                "google-research#79). Length n has weight 1/n."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 3: budget
def prediction_budget(n_tokens: int, max_predictions: int = 20, masked_lm_prob: float = 0.15) -> int:
    """The package's budget rule (text.masking.prediction_budget), with the arguments in the chapter's order."""
    return min(max_predictions, max(1, round(masked_lm_prob * n_tokens)))


def _budget_cases(rng: np.random.Generator) -> list[Case]:
    return [Case((int(rng.integers(1, 1024)), int(rng.integers(1, 100)),
                  float(rng.choice([0.1, 0.15, 0.2, 0.3])))) for _ in range(12)]


def _rounded(how):
    return lambda n, cap=20, p=0.15: min(cap, max(1, how(p * n)))


BUDGET = Exercise(
    "prediction_budget", "06", prediction_budget,
    [Case((n, cap, p), note=note) for n, cap, p, note in [
        (128, 20, 0.15, "this book's longest sequence"), (512, 20, 0.15, "the paper's sequence length"),
        (3, 20, 0.15, "a very short sequence"), (1, 20, 0.15, ""), (133, 20, 0.15, ""), (137, 20, 0.15, ""),
        (100, 20, 0.15, ""), (256, 80, 0.15, ""), (7, 20, 0.5, ""),
        (5, 20, 0.5, "2.5: which way does a half go?"), (64, 20, 0.2, ""), (512, 76, 0.15, "")]],
    drawn=_budget_cases, normalize=python_int, unavailable=_BUDGET,
    hints=("revisit the section on the prediction budget: a share of the tokens, then two limits on it.",
           "try your function at both ends, a very short sequence and a 512-token one, and check which rounding "
           "the reference uses."),
    mistakes=(
        Mistake(lambda got, want, args, kw: got > args[1], "more than max_predictions: the cap is a ceiling."),
        Mistake(lambda got, want, args, kw: got == 0,
                "no prediction at all: however short the sequence, at least one token is predicted."),
        Mistake(_is(_rounded(math.floor)),
                "rounded down: the reference rounds to the nearest whole number, with Python's round."),
        Mistake(_is(_rounded(lambda x: math.floor(x + 0.5))),
                "a half went up: Python's round sends a half to the even neighbour, so 2.5 becomes 2 and 3.5 "
                "becomes 4."),
        Mistake(_is(_rounded(math.ceil)),
                "rounded up: the reference rounds to the nearest whole number, with Python's round."),
        Mistake(_is(lambda n, cap=20, p=0.15: min(cap, max(1, round((n - 3) * p)))),
                "n_tokens already counts [CLS] and the two [SEP]s: take the share of all of them."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 4: 80/10/10
_TRIALS = 2000
# A 40-token sequence with spans of 1, 2 and 3 tokens; the pool of replacement ids starts at 500 so that an
# index into it is not itself a valid replacement id.
_TOKENS = np.arange(100, 140, dtype=np.int64)
_SPANS = [(2, 3), (5, 7), (10, 13), (20, 22), (30, 31), (34, 37)]
_POOL = np.arange(500, 1000, dtype=np.int64)
_EXACT = ("changed tokens outside the spans", "random ids not from replacement_ids")


def apply_80_10_10(tokens: np.ndarray, spans, rng: np.random.Generator, mask_id: int,
                   replacement_ids: np.ndarray) -> np.ndarray:
    """Per token inside the spans: [MASK] with p 0.8, a random id from replacement_ids with 0.1, else unchanged
    (the package's replace_80_10_10 on the spans' positions)."""
    out = np.array(tokens, copy=True)
    positions = np.array([i for start, end in spans for i in range(start, end)], dtype=np.int64)
    u = rng.random(len(positions))
    out[positions[u < 0.8]] = mask_id
    randomized = positions[(u >= 0.8) & (u < 0.9)]
    out[randomized] = np.asarray(replacement_ids)[rng.integers(len(replacement_ids), size=len(randomized))]
    return out


def _expected_treatment(tokens, spans, rng, mask_id, replacement_ids) -> dict[str, float]:
    """The closed form: 0.8 / 0.1 / 0.1 per token, independent neighbours, nothing else touched."""
    return {"[MASK]": 0.8, "random": 0.1, "unchanged": 0.1,
            "same choice for two neighbours in a span": 0.8 ** 2 + 0.1 ** 2 + 0.1 ** 2,
            _EXACT[0]: 0.0, _EXACT[1]: 0.0}


def _treatment(values: list, case: Case) -> dict[str, float]:
    """Frequencies of what the answers did inside and outside the spans over the case's calls."""
    tokens, spans, _, mask_id, pool = case.args
    inside = np.zeros(len(tokens), dtype=bool)
    for start, end in spans:
        inside[start:end] = True
    pairs = np.array([(i, i + 1) for start, end in spans for i in range(start, end - 1)])  # neighbours in a span
    counts = dict.fromkeys(("mask", "random", "kept", "outside_changed", "outside_pool", "pair_same"), 0)
    for out in values:
        if type(out) is not np.ndarray:
            raise WrongForm(f"returned {kind_of(out)}; the text asks for a new numpy array of token ids")
        if out.shape != tokens.shape or out.dtype.kind not in "iu":
            raise WrongForm(f"returned an array of shape {out.shape} and dtype {out.dtype}; return the whole "
                            f"sequence of ids, shape {tokens.shape}")
        kind = np.where(out == mask_id, 0, np.where(out == tokens, 2, 1))  # 0 [MASK], 1 random, 2 kept
        counts["mask"] += np.count_nonzero(kind[inside] == 0)
        counts["random"] += np.count_nonzero(kind[inside] == 1)
        counts["kept"] += np.count_nonzero(kind[inside] == 2)
        counts["outside_changed"] += np.count_nonzero(out[~inside] != tokens[~inside])
        counts["outside_pool"] += np.count_nonzero(~np.isin(out[inside][kind[inside] == 1], pool))
        counts["pair_same"] += np.count_nonzero(kind[pairs[:, 0]] == kind[pairs[:, 1]])
    n_inside = len(values) * inside.sum()
    return {"[MASK]": float(counts["mask"] / n_inside), "random": float(counts["random"] / n_inside),
            "unchanged": float(counts["kept"] / n_inside),
            "same choice for two neighbours in a span": float(counts["pair_same"] / (len(values) * len(pairs))),
            _EXACT[0]: float(counts["outside_changed"]), _EXACT[1]: float(counts["outside_pool"])}


def _same_treatment(got: dict, expected: dict) -> bool:
    return type(got) is dict and got.keys() == expected.keys() and all(
        got[k] == expected[k] if k in _EXACT else abs(got[k] - expected[k]) <= 0.02 for k in expected)


def _masking_case(rng_seed: int, mask_id: int, global_seed: int, spans=None, note: str = "") -> Case:
    return Case((_TOKENS, list(_SPANS if spans is None else spans), Rng(rng_seed), mask_id, _POOL),
                repeat=_TRIALS, global_seed=global_seed, note=note)


def _drawn_spans(rng: np.random.Generator) -> list[tuple[int, int]]:
    """Non-overlapping spans of 1-3 tokens over the 40 tokens, at least one of them with two neighbours."""
    spans, position = [], int(rng.integers(0, 3))
    while position < len(_TOKENS) - 3:
        length = int(rng.integers(1, 4)) if spans else int(rng.integers(2, 4))
        spans.append((position, position + length))
        position += length + int(rng.integers(1, 6))
    return spans


MASKING = Exercise(
    "apply_80_10_10", "06", _expected_treatment,
    [_masking_case(0, 4, 1, note="2,000 calls with one Generator"), _masking_case(1, 7, 2),
     _masking_case(1, 7, 3, note="the same rng seed under another global seed")],
    drawn=lambda rng: [_masking_case(int(rng.integers(2**31)), int(rng.integers(5, 100)),
                                     int(rng.integers(2**31)), _drawn_spans(rng))],
    summarize=_treatment, compare=_same_treatment, screen=_only_from_rng, keep_inputs=True, new_result=True,
    unavailable=_REPLACE,
    title="apply_80_10_10 (frequencies over 2,000 calls)",
    hints=("revisit the 80/10/10 rule: three outcomes for every chosen token, each with its probability.",
           "compare your frequencies with the expected ones above: which outcome comes out too often, and does "
           "every token get a draw of its own?"),
    mistakes=(
        Mistake(lambda got, want, args, kw: got[_EXACT[0]] > 0,
                "tokens outside the spans changed: a span (start, end) stops before `end`, and nothing outside "
                "the spans may change."),
        Mistake(lambda got, want, args, kw: got[_EXACT[1]] > 0,
                "some random replacements are not elements of replacement_ids: pick an element of that array, "
                "not a position in it."),
        Mistake(lambda got, want, args, kw: got["same choice for two neighbours in a span"] > 0.9,
                "neighbours in a span always get the same treatment: decide for every token on its own, not "
                "once per span."),
        Mistake(lambda got, want, args, kw: got["unchanged"] < 0.05,
                "no token stays as it was: one chosen token in ten keeps its id."),
    ),
)
EXERCISES = [NGRAM, SAMPLE, BUDGET, MASKING]


def check_ngram_probabilities(fn) -> bool:
    """Check `fn(max_n)` returns [p(1), ..., p(max_n)] with p(n) proportional to 1/n."""
    return NGRAM.check(fn)


def check_sample_span_length(fn) -> bool:
    """Check that `fn(rng, max_n)` draws n from p(n) (a chi-square test on 1,000 seeded draws), from `rng` alone."""
    return SAMPLE.check(fn)


def check_prediction_budget(fn) -> bool:
    """Check `fn(n_tokens, max_predictions, masked_lm_prob)` against the reference's budget rule."""
    return BUDGET.check(fn)


def check_apply_80_10_10(fn) -> bool:
    """Check `fn(tokens, spans, rng, mask_id, replacement_ids)` statistically over 2,000 seeded calls."""
    return MASKING.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "ngram_probabilities": [Masker.__init__, ngram_probabilities],
    "sample_span_length": [sample_span_length],
    "prediction_budget": [package_budget, prediction_budget],
    "apply_80_10_10": [apply_80_10_10, replace_80_10_10],
}
# p(1..3) for N = 3 (6/11, 3/11, 2/11): shown before Exercise 1, or anywhere in a cell's source, they would give
# its answer away.
KEY_NUMBERS: dict[str, list] = {"ngram_probabilities": [6 / 11, 3 / 11, 2 / 11]}
