"""Checks for Chapter 5 (sentence-order prediction): an SOP pair, the NSP label from sources, word overlap."""

from __future__ import annotations

import numpy as np

from ...study.leak_probe import type_overlap
from .checking import Case, Exercise, Mistake, WrongForm, int_list, kind_of, number


# ------------------------------------------------------------------------------------------- references
def sop_pair(segment_a, segment_b, swap: bool):
    """(first, second, label): the two consecutive segments in text order (label 0) or swapped (label 1)."""
    return (list(segment_b), list(segment_a), 1) if swap else (list(segment_a), list(segment_b), 0)


def nsp_label_from_sources(source_a, source_b) -> int:
    """0 when B is the true continuation of A (same document, B starts where A ends), else 1."""
    return 0 if source_a[0] == source_b[0] and source_b[1] == source_a[2] else 1


def overlap_feature(tokens_a, tokens_b) -> float:
    """The fraction of B's distinct tokens that also occur in A (0.0 for an empty B): the package's type_overlap."""
    return type_overlap(tokens_a, tokens_b)


# ------------------------------------------------------------------------------------------- answers' forms
def a_label(value, what: str = "the label") -> int:
    """A label: the Python int 0 or 1 (a bool reads as a yes/no answer, not as the class number asked for)."""
    if type(value) is bool:
        raise WrongForm(f"{what} is the bool {value}; the text asks for the int 0 or 1 (int(...) converts it)")
    if isinstance(value, np.integer):
        raise WrongForm(f"{what} is {kind_of(value)}; return a Python int (int(...) converts a numpy number)")
    if type(value) is not int:
        raise WrongForm(f"{what} is {kind_of(value)}; return the int 0 or 1")
    return value


def a_pair_and_label(value) -> tuple[list[int], list[int], int]:
    """(first, second, label): two id sequences and an int label, as a tuple or a list of three."""
    if type(value) not in (tuple, list) or len(value) != 3:
        what = f"{len(value)} items" if type(value) in (tuple, list) else kind_of(value)
        raise WrongForm(f"returned {what}; return three things: (first, second, label)")
    return int_list(value[0], "first"), int_list(value[1], "second"), a_label(value[2])


# ------------------------------------------------------------------------------------------- cases
def _random_segments(rng: np.random.Generator, n: int, vocab: int = 30) -> list[tuple[list[int], list[int]]]:
    """n pairs of short id lists from a small vocabulary, so that they share some ids."""
    pairs = []
    for _ in range(n):
        a = rng.integers(5, vocab, size=int(rng.integers(1, 12))).tolist()
        b = rng.integers(5, vocab, size=int(rng.integers(1, 12))).tolist()
        pairs.append((a, b))
    return pairs


# ------------------------------------------------------------------------------------------- Exercise 1
def _gives(answer):
    """A test: the answer is what `answer(a, b, swap)` builds from the case's input."""
    def test(got, expected, args, kwargs) -> bool:
        a, b, swap = args
        return got != expected and got == answer(list(a), list(b), bool(swap))
    return test


SOP_PAIR = Exercise(
    "sop_pair", "05", sop_pair,
    [Case(([7, 8, 9], [10, 11], False)), Case(([7, 8, 9], [10, 11], True)),
     Case(([42], [43, 44, 45, 46], True)), Case(([42], [43, 44, 45, 46], False))],
    drawn=lambda rng: [Case((a, b, bool(rng.random() < 0.5))) for a, b in _random_segments(rng, 12)],
    normalize=a_pair_and_label, keep_inputs=True,
    hints=("revisit the table of the two tasks: what the model sees in each SOP case, and which question the "
           "label answers.",
           "the two inputs are in text order already; the swap decides both the order you return and the label."),
    mistakes=(
        Mistake(_gives(lambda a, b, swap: (b, a, 0) if swap else (a, b, 1)),
                "the order is right but the label reads the wrong way round: 1 means \"swapped\"."),
        Mistake(_gives(lambda a, b, swap: (a, b, int(swap))),
                "the label says \"swapped\" but the segments are still in text order: a swapped pair shows B first."),
        Mistake(_gives(lambda a, b, swap: (a, b, 1) if swap else (b, a, 0)),
                "you swap the segments when swap is False: without a swap they stay in text order."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 2
def _nsp_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(16):
        doc, start, length = int(rng.integers(0, 4)), int(rng.integers(0, 50)), int(rng.integers(1, 30))
        other = doc if rng.random() < 0.6 else int(rng.integers(0, 4))
        b_start = start + length if rng.random() < 0.6 else int(rng.integers(0, 100))
        cases.append(Case(((doc, start, start + length), (other, b_start, b_start + int(rng.integers(1, 30))))))
    return cases


def _label_is(rule):
    """A test: the answer is what `rule(a, b)` (True for label 0) gives on the case's sources."""
    return lambda got, expected, args, kwargs: got != expected and got == (0 if rule(*args) else 1)


NSP_LABEL = Exercise(
    "nsp_label_from_sources", "05", nsp_label_from_sources,
    [Case(((3, 0, 40), (3, 40, 90)), note="the true next segment"),
     Case(((3, 0, 40), (5, 40, 90)), note="another document that happens to have the same offsets"),
     Case(((3, 0, 40), (3, 60, 90)), note="the same document, further on"),
     Case(((3, 0, 40), (3, 41, 90)), note="the same document, one token later: not the continuation"),
     Case(((3, 40, 90), (3, 0, 40)), note="the same document, but B comes before A (an SOP swap)"),
     Case(((0, 10, 20), (0, 20, 21))), Case(((7, 0, 5), (2, 0, 5)))],
    drawn=_nsp_cases, normalize=a_label,
    hints=("revisit what a source records, (document, first token, end token), and what \"B follows A\" means "
           "in those three numbers.",
           "label 0 needs two things to hold at once; the cases in the check's notes each break one of them."),
    mistakes=(
        Mistake(lambda got, expected, args, kwargs: expected == 0 and got == 1,
                "this B is A's true continuation, label 0. Check which way round the labels go, and that you "
                "read the end token as exclusive, like the end of a Python slice."),
        Mistake(_label_is(lambda a, b: a[0] == b[0] and (b[1] == a[2] or b[2] == a[1])),
                "B must come after A: a B that ends where A starts is the text before A (an SOP swap)."),
        Mistake(_label_is(lambda a, b: a[0] == b[0] and b[1] == a[2] + 1),
                "the end token is exclusive, like the end of a Python slice: the token right after A is the "
                "one numbered A's end."),
        Mistake(_label_is(lambda a, b: a[0] == b[0]),
                "the same document is not enough: B must start exactly where A ends."),
        Mistake(_label_is(lambda a, b: b[1] == a[2]),
                "another document can have the same offsets: B must also come from A's document."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 3
def _as_ids(tokens) -> list[int]:
    return [int(t) for t in tokens]


def _overlap_is(rule):
    """A test: the answer equals `rule(types_a, types_b, a, b)` on the case's tokens."""
    def test(got, expected, args, kwargs) -> bool:
        a, b = _as_ids(args[0]), _as_ids(args[1])
        value = rule(set(a), set(b), a, b)
        return not np.isclose(got, expected) and np.isclose(got, value)
    return test


OVERLAP = Exercise(
    "overlap_feature", "05", overlap_feature,
    [Case((a, b)) for a, b in [([5, 6, 7], [6, 7, 8, 9]), ([5, 6, 7], [5, 5, 5, 9]), ([5], [6]), ([5, 6], [5, 6]),
                               ([5, 6, 7, 8, 9, 10], [5, 11])]]
    + [Case(([1, 2, 3], []), note="an empty B"),
       Case((np.asarray([5, 6, 7], dtype=np.int32), np.asarray([7, 7, 8], dtype=np.int32)),
            note="NumPy arrays, as Instance.segments() gives")],
    drawn=lambda rng: ([Case((a, b)) for a, b in _random_segments(rng, 16)]
                       + [Case((np.asarray(a, dtype=np.int32), np.asarray(b, dtype=np.int32)))
                          for a, b in _random_segments(rng, 4)]),
    normalize=number, keep_inputs=True, rtol=1e-9, atol=1e-12,
    hints=("revisit the feature's definition: which segment's tokens are counted, and does a repeated token "
           "count once or every time?",
           "the denominator belongs to B alone; try your function on a B that repeats a token."),
    mistakes=(
        Mistake(_overlap_is(lambda ta, tb, a, b: sum(t in ta for t in b) / len(b)),
                "count B's distinct tokens (its types), not its occurrences: a repeated token counts once."),
        Mistake(_overlap_is(lambda ta, tb, a, b: len(ta & tb) / len(ta)),
                "divide by the number of B's distinct tokens, not A's."),
        Mistake(_overlap_is(lambda ta, tb, a, b: len(ta & tb) / len(ta | tb)),
                "that is the Jaccard index (shared types over all types of A and B); the feature divides by B's "
                "types only."),
        Mistake(_overlap_is(lambda ta, tb, a, b: 1 - len(ta & tb) / len(tb)),
                "that is the fraction of B's types missing from A; the feature counts those found in A."),
        Mistake(_overlap_is(lambda ta, tb, a, b: len(ta & tb)),
                "that is a count of shared types; the feature is a fraction of B's types."),
        Mistake(lambda got, expected, args, kwargs: len(args[1]) == 0 and got != 0.0,
                "for an empty B the feature is 0.0."),
    ),
    unavailable=("albert_mini.study.leak_probe:type_overlap",),
)
EXERCISES = [SOP_PAIR, NSP_LABEL, OVERLAP]


def check_sop_pair(fn) -> bool:
    """Check `fn(segment_a, segment_b, swap)` returns (first, second, label) with label 1 = swapped."""
    return SOP_PAIR.check(fn)


def check_nsp_label_from_sources(fn) -> bool:
    """Check `fn(source_a, source_b)` on (document, first token, end token) triples."""
    return NSP_LABEL.check(fn)


def check_overlap_feature(fn) -> bool:
    """Check `fn(tokens_a, tokens_b)`: the fraction of B's distinct tokens found in A."""
    return OVERLAP.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "sop_pair": [sop_pair],
    "nsp_label_from_sources": [nsp_label_from_sources],
    "overlap_feature": [type_overlap],
}
KEY_NUMBERS: dict[str, list] = {}
