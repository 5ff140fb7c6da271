"""Checks for Chapter 2 (tokenization): ALBERT's preprocessing, the pair layout, longest-first truncation."""

from __future__ import annotations

import functools

import numpy as np

from ...text.tokenizer import Tokenizer, preprocess_text
from .checking import check_against_reference

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["truncate_longest_first"]

# Strings that tell the steps apart: accents, ligatures and fractions (NFKD, not NFD or NFKC), combining marks,
# upper case outside ASCII, every kind of whitespace, TeX-style quotes, and characters that must survive.
TRICKY_TEXTS = [
    "It is a truth universally acknowledged.",
    "  Caf\u00e9\t\u00c5NGSTR\u00d6M \n ``quoted''  ",
    "na\u00efve r\u00e9sum\u00e9 \u2014 \u201ccurly quotes\u201d stay",
    "\ufb01ne \u00bd x\u0301y",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac and \u00a35,000 a year",
    "Mr. Darcy--who else?--was there!",
    "line one\nline two\r\nthree\u00a0four",
    "``Yes,'' said she, ``it is.''",
    "",
    "   ",
    "\u00c9MILE Z\u00d6E",
]


def truncate_longest_first(ids_a: list[int], ids_b: list[int], max_total: int) -> tuple[list[int], list[int]]:
    """ALBERT's fine-tuning rule: while too long, drop the last token of the longer segment (of B on a tie)."""
    len_a, len_b = len(ids_a), len(ids_b)
    while len_a + len_b > max_total:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return list(ids_a[:len_a]), list(ids_b[:len_b])


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    return Tokenizer.default()


def pair_layout(ids_a: list[int], ids_b: list[int] | None = None) -> tuple[list[int], list[int]]:
    """(input_ids, token_type_ids) of [CLS] A [SEP] (B [SEP]), from the package's Tokenizer.encode_pair."""
    encoded = _tokenizer().encode_pair(list(ids_a), None if ids_b is None else list(ids_b))
    return encoded["input_ids"], encoded["token_type_ids"]


def _as_lists(result):
    """Accept tuples, lists or arrays from the learner; compare as plain lists of ints."""
    return tuple([int(i) for i in part] for part in result) if isinstance(result, (tuple, list)) else result


def check_albert_preprocess(fn) -> bool:
    """Check `fn(text)` against albert_mini.text.tokenizer.preprocess_text on tricky strings and Austen sentences."""
    from ...text.corpus import load_corpus

    sentences = [s for doc in load_corpus("austen", "validation")[:2] for s in doc.sentences()][:20]
    cases = [((text,), {}) for text in TRICKY_TEXTS + sentences]
    return check_against_reference(
        "albert_preprocess", fn, preprocess_text, cases,
        hint="in order: `` and '' become \"; unicodedata.normalize('NFKD', ...) (the K matters for ligatures and "
             "fractions); drop characters with unicodedata.combining(c) != 0; lower-case; ' '.join(text.split()).",
    )


def _id_cases(seed: int, count: int) -> list[tuple[tuple, dict]]:
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        a = rng.integers(5, 8000, size=int(rng.integers(0, 12))).tolist()
        b = None if rng.random() < 0.25 else rng.integers(5, 8000, size=int(rng.integers(0, 12))).tolist()
        cases.append(((a, b), {}))
    return cases


def check_pair_layout(fn) -> bool:
    """Check `fn(ids_a, ids_b=None)` returns ([CLS] A [SEP] (B [SEP]), token types) like Tokenizer.encode_pair."""
    fixed = [(([10, 11, 12], [20, 21]), {}), (([10, 11, 12], None), {}), (([7], [8]), {}), (([], [9]), {})]
    return check_against_reference(
        "pair_layout", lambda a, b=None: _as_lists(fn(a, b)), pair_layout, fixed + _id_cases(seed=2, count=12),
        hint="input_ids = [2] + A + [3] (+ B + [3] for a pair); token types are 0 for [CLS], A and the first "
             "[SEP], and 1 for B and the final [SEP]. Return the two lists as a tuple.",
    )


def check_truncate_longest_first(fn) -> bool:
    """Check `fn(ids_a, ids_b, max_total)` against ALBERT's fine-tuning truncation rule."""
    rng = np.random.default_rng(3)
    fixed = [(5, 5, 7), (6, 5, 7), (5, 6, 7), (10, 2, 8), (2, 10, 8), (3, 3, 6), (4, 4, 100), (0, 9, 4),
             (9, 0, 4), (7, 7, 0), (1, 12, 5), (8, 8, 9)]
    sizes = fixed + [(int(rng.integers(0, 30)), int(rng.integers(0, 30)), int(rng.integers(0, 50))) for _ in range(16)]
    cases = [((list(range(100, 100 + la)), list(range(200, 200 + lb)), total), {}) for la, lb, total in sizes]
    return check_against_reference(
        "truncate_longest_first", lambda a, b, total: _as_lists(fn(list(a), list(b), total)), truncate_longest_first,
        cases,
        hint="loop while len(a) + len(b) > max_total: remove the LAST token of the longer segment; when both "
             "have the same length, remove it from B. Return (a, b).",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "albert_preprocess": [preprocess_text],
    "pair_layout": [Tokenizer.encode_pair],
    "truncate_longest_first": [truncate_longest_first],
}
KEY_NUMBERS: dict[str, list] = {}
