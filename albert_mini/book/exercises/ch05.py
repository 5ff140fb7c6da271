"""Checks for Chapter 5 (sentence-order prediction): an SOP pair, the NSP label from sources, word overlap."""

from __future__ import annotations

import numpy as np

from .checking import check_against_reference

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["overlap_feature"]


# ------------------------------------------------------------------------------------------- references
def sop_pair(segment_a, segment_b, swap: bool):
    """(first, second, label): the two consecutive segments in text order (label 0) or swapped (label 1)."""
    return (list(segment_b), list(segment_a), 1) if swap else (list(segment_a), list(segment_b), 0)


def nsp_label_from_sources(source_a, source_b) -> int:
    """0 when B is the true continuation of A (same document, B starts where A ends), else 1."""
    return 0 if source_a[0] == source_b[0] and source_b[1] == source_a[2] else 1


def overlap_feature(tokens_a, tokens_b) -> float:
    """The fraction of B's distinct tokens that also occur in A (0.0 for an empty B)."""
    types_b = set(int(t) for t in tokens_b)
    if not types_b:
        return 0.0
    return len(types_b & set(int(t) for t in tokens_a)) / len(types_b)


# ------------------------------------------------------------------------------------------- cases
def _random_segments(rng: np.random.Generator, n: int, vocab: int = 30) -> list[tuple[list[int], list[int]]]:
    """n pairs of short id lists from a small vocabulary, so that they share some ids."""
    pairs = []
    for _ in range(n):
        a = rng.integers(5, vocab, size=int(rng.integers(1, 12))).tolist()
        b = rng.integers(5, vocab, size=int(rng.integers(1, 12))).tolist()
        pairs.append((a, b))
    return pairs


# ------------------------------------------------------------------------------------------- SOP pair
def check_sop_pair(fn) -> bool:
    """Check `fn(segment_a, segment_b, swap)` returns (first, second, label) with label 1 = swapped."""
    fixed = [(([7, 8, 9], [10, 11], False), {}), (([7, 8, 9], [10, 11], True), {}),
             (([42], [43, 44, 45, 46], True), {}), (([42], [43, 44, 45, 46], False), {})]
    rng = np.random.default_rng(5)
    random = [((a, b, bool(rng.random() < 0.5)), {}) for a, b in _random_segments(rng, 12)]

    def same(got, expected):
        return (isinstance(got, tuple) and len(got) == 3 and list(got[0]) == expected[0]
                and list(got[1]) == expected[1] and isinstance(got[2], (int, np.integer))
                and not isinstance(got[2], bool) and int(got[2]) == expected[2])

    return check_against_reference(
        "sop_pair", fn, sop_pair, fixed + random, compare=same,
        hint="A and B are consecutive in the text. Without a swap return them in text order with label 0; with a "
             "swap return B first, then A, with label 1 (the label answers 'is this pair swapped?'). "
             "The label is an int, not a bool.",
    )


# ------------------------------------------------------------------------------------------- NSP label
def check_nsp_label_from_sources(fn) -> bool:
    """Check `fn(source_a, source_b)` on (document, first token, end token) triples."""
    fixed = [((3, 0, 40), (3, 40, 90)),    # the true next segment
             ((3, 0, 40), (5, 40, 90)),    # another document that happens to have the same offsets
             ((3, 40, 90), (3, 0, 40)),    # the same document, but B comes before A (an SOP swap)
             ((3, 0, 40), (3, 41, 90)),    # the same document, one token later: not the continuation
             ((0, 10, 20), (0, 20, 21)), ((7, 0, 5), (2, 0, 5))]
    rng = np.random.default_rng(6)
    random = []
    for _ in range(16):
        doc, start, length = int(rng.integers(0, 4)), int(rng.integers(0, 50)), int(rng.integers(1, 30))
        other = doc if rng.random() < 0.6 else int(rng.integers(0, 4))
        b_start = start + length if rng.random() < 0.6 else int(rng.integers(0, 100))
        random.append(((doc, start, start + length), (other, b_start, b_start + int(rng.integers(1, 30)))))
    cases = [((a, b), {}) for a, b in fixed + random]
    return check_against_reference(
        "nsp_label_from_sources", fn, nsp_label_from_sources, cases,
        hint="label 0 only when B truly follows A: the same document AND B's first token is A's end token; "
             "anything else (another document, or elsewhere in the same one) is label 1.",
    )


# ------------------------------------------------------------------------------------------- overlap
def check_overlap_feature(fn) -> bool:
    """Check `fn(tokens_a, tokens_b)`: the fraction of B's distinct tokens found in A."""
    fixed = [([5, 6, 7], [6, 7, 8, 9]), ([5, 6, 7], [5, 5, 5, 9]), ([5], [6]), ([5, 6], [5, 6]),
             ([5, 6, 7, 8, 9, 10], [5, 11]), ([1, 2, 3], [])]
    rng = np.random.default_rng(7)
    cases = [((a, b), {}) for a, b in fixed + _random_segments(rng, 16)]
    cases += [((np.asarray(a, dtype=np.int32), np.asarray(b, dtype=np.int32)), {})
              for a, b in _random_segments(rng, 4)]
    return check_against_reference(
        "overlap_feature", fn, overlap_feature, cases, rtol=1e-9, atol=1e-12,
        hint="count distinct tokens (word types), not occurrences: make a set of B's ids, count how many of them "
             "are in the set of A's ids, and divide by the size of B's set; return 0.0 when B is empty.",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "sop_pair": [sop_pair],
    "nsp_label_from_sources": [nsp_label_from_sources],
    "overlap_feature": [overlap_feature],
}
KEY_NUMBERS: dict[str, list] = {}
