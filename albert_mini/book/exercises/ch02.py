"""Checks for Chapter 2 (tokenization): ALBERT's preprocessing, the pair layout, longest-first truncation."""

from __future__ import annotations

import functools
import unicodedata

import numpy as np

from ...text.tokenizer import Tokenizer, preprocess_text, truncate_longest_first
from .checking import Case, Exercise, Mistake, WrongForm, int_list, kind_of

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
# What drawn strings are made of: plain words, and one of each kind of character the steps treat differently.
_PIECES = ["the", "Emma", "Caf\u00e9", "\u00c5ngstr\u00f6m", "\ufb01", "\ufb02ow", "\u00bd", "x\u0301",
           "\u00c9MILE", "\u0395\u03bb\u03bb\u03ac\u03b4\u03b1", "\u00a35", "``", "''", "'", '"', "--", "\u2014",
           "\u201c", "na\u00efve", "\u2460", "\u00b2", "\u212b", "Z\u00d6E"]
_SPACES = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003", ""]


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    return Tokenizer.default()


# ------------------------------------------------------------------------------------------- references
def albert_preprocess(text: str) -> str:
    """ALBERT's preprocessing: the package's `preprocess_text`."""
    return preprocess_text(text)


def pair_layout(ids_a: list[int], ids_b: list[int] | None = None) -> tuple[list[int], list[int]]:
    """(input_ids, token_type_ids) of [CLS] A [SEP] (B [SEP]), from the package's Tokenizer.encode_pair."""
    encoded = _tokenizer().encode_pair(list(ids_a), None if ids_b is None else list(ids_b))
    return encoded["input_ids"], encoded["token_type_ids"]


# ------------------------------------------------------------------------------------------- answers' forms
def a_string(value) -> str:
    if type(value) is not str:
        raise WrongForm(f"returned {kind_of(value)}; return the preprocessed text as a str")
    return value


def two_id_lists(value) -> tuple[list[int], list[int]]:
    """A pair of id sequences (tuple or list of two; each a list, tuple, 1-d array or tensor) as two int lists."""
    if type(value) not in (tuple, list) or len(value) != 2:
        what = f"{len(value)} items" if type(value) in (tuple, list) else kind_of(value)
        raise WrongForm(f"returned {what}; return two lists, as a tuple (first, second)")
    return int_list(value[0], "the first list"), int_list(value[1], "the second list")


# ------------------------------------------------------------------------------------------- Exercise 1
def _without(step: str):
    """ALBERT's preprocessing with one step changed, the way a learner's answer gets it wrong."""
    def preprocess(text: str) -> str:
        if step != "keeps-tex-quotes":
            text = text.replace("``", "" if step == "drops-tex-quotes" else '"')
            text = text.replace("''", "" if step == "drops-tex-quotes" else '"')
        form = {"nfd": "NFD", "nfkc": "NFKC", "nfc": "NFC"}.get(step, "NFKD")
        text = unicodedata.normalize(form, text)
        if step == "ascii":
            text = text.encode("ascii", "ignore").decode()
        elif step != "keeps-marks":
            text = "".join(c for c in text if not unicodedata.combining(c))
        if step != "keeps-case":
            text = text.lower()
        if step == "strip-only":
            return text.strip()
        if step == "split-on-spaces":
            return " ".join(part for part in text.split(" ") if part)
        return " ".join(text.split())
    return preprocess


def _gives(variant):
    return lambda got, expected, args, kwargs: got != expected and got == variant(*args, **kwargs)


def _preprocess_cases(rng: np.random.Generator) -> list[Case]:
    """Strings made of words and tricky characters, separated by every kind of whitespace."""
    cases = []
    for _ in range(8):
        parts = rng.choice(len(_PIECES), size=int(rng.integers(1, 8)))
        text = "".join(_SPACES[int(rng.integers(len(_SPACES)))] + _PIECES[int(p)] for p in parts)
        cases.append(Case((text + _SPACES[int(rng.integers(len(_SPACES)))],)))
    return cases


@functools.lru_cache(maxsize=1)
def _austen_sentences() -> tuple[str, ...]:
    from ...text.corpus import load_corpus

    return tuple(s for doc in load_corpus("austen", "validation")[:2] for s in doc.sentences())


def _austen_cases(rng: np.random.Generator) -> list[Case]:
    """The first ten sentences of the validation chapters, then six drawn from the first two chapters."""
    sentences = _austen_sentences()
    drawn = rng.choice(len(sentences), size=6, replace=False)
    return [Case((sentences[int(i)],), note="an Austen sentence") for i in [*range(10), *drawn]]


PREPROCESS = Exercise(
    "albert_preprocess", "02", albert_preprocess,
    [Case((text,)) for text in TRICKY_TEXTS],
    drawn=lambda rng: _austen_cases(rng) + _preprocess_cases(rng), normalize=a_string,
    hints=("find the first character where your text and the expected one differ, and ask which of the five "
           "steps above should have produced it.",
           "the order of the steps matters: the accents can only be dropped once something has split them off "
           "their letters."),
    mistakes=(
        Mistake(_gives(_without("nfd")), "ligatures and fractions survive: the decomposition you use is the "
                                         "canonical one; ALBERT's also replaces compatibility characters."),
        Mistake(lambda got, expected, args, kwargs: (_gives(_without("nfkc"))(got, expected, args, kwargs)
                                                     or _gives(_without("nfc"))(got, expected, args, kwargs)),
                "a composed form puts each accent back onto its letter, so there is no mark left to drop: "
                "decompose instead."),
        Mistake(_gives(_without("keeps-marks")), "the accents are still there: after the decomposition, drop the "
                                                 "combining marks."),
        Mistake(_gives(_without("ascii")), "encoding to ASCII also throws away characters that are not accents "
                                           "(the pound sign, Greek letters): drop only the combining marks."),
        Mistake(_gives(_without("keeps-case")), "the text still has capitals: ALBERT's English models are "
                                                "uncased."),
        Mistake(_gives(_without("keeps-tex-quotes")), "the TeX-style quotes `` and '' should each become a "
                                                      "plain double quote."),
        Mistake(_gives(_without("drops-tex-quotes")), "the TeX-style quotes are replaced by a double quote, not "
                                                      "removed."),
        Mistake(lambda got, expected, args, kwargs: (_gives(_without("strip-only"))(got, expected, args, kwargs)
                                                     or _gives(_without("split-on-spaces"))(got, expected, args,
                                                                                            kwargs)),
                "whitespace inside the text counts too: every run of spaces, tabs, newlines or other blanks "
                "becomes one space."),
    ),
    unavailable=("albert_mini.text.tokenizer:preprocess_text",),
)


# ------------------------------------------------------------------------------------------- Exercise 2
def _id_cases(rng: np.random.Generator, count: int) -> list[Case]:
    cases = []
    for _ in range(count):
        a = rng.integers(5, 8000, size=int(rng.integers(0, 12))).tolist()
        b = None if rng.random() < 0.25 else rng.integers(5, 8000, size=int(rng.integers(0, 12))).tolist()
        cases.append(Case((a,) if b is None and rng.random() < 0.5 else (a, b)))
    return cases


def _layout(*, cls=True, final_sep=True, b_for_none=False):
    """The pair layout with one thing changed, as a learner's answer gets it wrong."""
    def layout(ids_a, ids_b=None):
        if ids_b is None and b_for_none:
            ids_b = []
        ids = ([2] if cls else []) + [*ids_a, 3]
        types = [0] * len(ids)
        if ids_b is not None:
            ids += [*ids_b, 3] if final_sep else [*ids_b]
            types += [1] * (len(ids_b) + (1 if final_sep else 0))
        return ids, types
    return layout


def _ids_right_types(got, expected) -> bool:
    return got[0] == expected[0] and got[1] != expected[1]


def _types_like(types_rule):
    return lambda got, expected, args, kwargs: (_ids_right_types(got, expected)
                                                and got[1] == types_rule(expected, *args, **kwargs))


def _last_sep_zero(expected, ids_a, ids_b=None):
    return expected[1][:-1] + [0] if ids_b is not None else expected[1]


def _first_sep_one(expected, ids_a, ids_b=None):
    types = list(expected[1])
    if ids_b is not None:
        types[len(ids_a) + 1] = 1
    return types


def _ids_like(variant):
    """A mistake in the ids that `variant` makes (the ids differ from the expected ones, and equal the variant's)."""
    return lambda got, expected, args, kwargs: (got[0] != expected[0]
                                                and got[0] == variant(*args, **kwargs)[0])


PAIR_LAYOUT = Exercise(
    "pair_layout", "02", pair_layout,
    [Case(([10, 11, 12], [20, 21])), Case(([10, 11, 12],), note="one segment: ids_b left out"),
     Case(([10, 11, 12], None)), Case(([7], [8])), Case(([], [9]), note="an empty first segment"),
     Case(([10, 11], []), note="an empty second segment: a segment all the same, unlike None")],
    drawn=lambda rng: _id_cases(rng, 12), normalize=two_id_lists, keep_inputs=True,
    hints=("revisit the layout above: which special tokens frame each segment, and to which segment each of "
           "them belongs.",
           "the token types follow the segments, specials included: find the position where segment A's part "
           "ends."),
    mistakes=(
        Mistake(_types_like(lambda expected, a, b=None: [0] * len(expected[1])),
                "every token type is 0: the second segment and its [SEP] have type 1."),
        Mistake(_types_like(_last_sep_zero), "the final [SEP] belongs to B: its token type is 1."),
        Mistake(_types_like(_first_sep_one), "the first [SEP] closes A: its token type is 0."),
        Mistake(lambda got, expected, args, kwargs: (len(args) > 1 and args[1] == [] and got[0] == expected[0][:-1]),
                "an empty second segment ([]) is still a segment, unlike None: it gets its [SEP]."),
        Mistake(_ids_like(_layout(final_sep=False)), "B is closed by a [SEP] of its own too."),
        Mistake(_ids_like(_layout(cls=False)), "every input starts with [CLS], before segment A."),
        Mistake(_ids_like(_layout(b_for_none=True)),
                "with ids_b=None there is no second segment, so no second [SEP] either."),
    ),
    unavailable=("albert_mini.text.tokenizer:Tokenizer.encode_pair",),
)


# ------------------------------------------------------------------------------------------- Exercise 3
def _ties_from_a(ids_a, ids_b, max_total):
    a, b = list(ids_a), list(ids_b)
    while len(a) + len(b) > max_total:
        (a if len(a) >= len(b) else b).pop()
    return a, b


def _from_the_front(ids_a, ids_b, max_total):
    a, b = list(ids_a), list(ids_b)
    while len(a) + len(b) > max_total:
        (a if len(a) > len(b) else b).pop(0)
    return a, b


def _cut_once(ids_a, ids_b, max_total):
    """Decides which segment is longer once, then cuts only that one."""
    a, b = list(ids_a), list(ids_b)
    longer = a if len(a) > len(b) else b
    while len(a) + len(b) > max_total and longer:
        longer.pop()
    while len(a) + len(b) > max_total:
        (b if longer is a else a).pop()
    return a, b


def _sizes(got, want, total):
    return (len(got[0]), len(got[1])) != (len(want[0]), len(want[1])) and len(got[0]) + len(got[1]) == total


def _truncation_cases(rng: np.random.Generator) -> list[Case]:
    sizes = [(int(rng.integers(0, 30)), int(rng.integers(0, 30)), int(rng.integers(0, 50))) for _ in range(16)]
    return [_truncation_case(*size) for size in sizes]


def _truncation_case(len_a: int, len_b: int, total: int, note: str = "") -> Case:
    return Case((list(range(100, 100 + len_a)), list(range(200, 200 + len_b)), total), note=note)


def _same_as(variant):
    return lambda got, expected, args, kwargs: got != expected and got == tuple(variant(*args, **kwargs))


TRUNCATE = Exercise(
    "truncate_longest_first", "02", truncate_longest_first,
    [_truncation_case(5, 5, 7, "a tie: both segments as long"), _truncation_case(6, 5, 7),
     _truncation_case(5, 6, 7), _truncation_case(10, 2, 8), _truncation_case(2, 10, 8), _truncation_case(3, 3, 6),
     _truncation_case(4, 4, 100, "the pair already fits"), _truncation_case(0, 9, 4), _truncation_case(9, 0, 4),
     _truncation_case(7, 7, 0, "no room at all"), _truncation_case(1, 12, 5), _truncation_case(8, 8, 9)],
    drawn=_truncation_cases, normalize=two_id_lists, keep_inputs=True,
    hints=("follow the rule by hand on this input, one token at a time, and see at which step your answer "
           "departs from it.",
           "which segment is the longer one can change while you cut: decide again before every token."),
    mistakes=(
        Mistake(_same_as(_ties_from_a), "on a tie the token comes off B, not A."),
        Mistake(_same_as(_from_the_front), "tokens come off the end of a segment, not its start."),
        Mistake(_same_as(_cut_once), "you chose the longer segment once; once it is no longer the longer one, "
                                     "the cutting moves to the other."),
        Mistake(lambda got, want, args, kw: _sizes(got, want, min(args[2], len(args[0]) + len(args[1])) - 1),
                "one token too many was removed: the pair may use exactly max_total tokens."),
        Mistake(lambda got, want, args, kw: len(got[0]) + len(got[1]) == min(args[2] + 1, len(args[0]) + len(
            args[1])) and got != want, "one token too few was removed: the pair must fit in max_total tokens."),
    ),
    unavailable=("albert_mini.text.tokenizer:truncate_longest_first",),
)
EXERCISES = [PREPROCESS, PAIR_LAYOUT, TRUNCATE]


def check_albert_preprocess(fn) -> bool:
    """Check `fn(text)` against albert_mini.text.tokenizer.preprocess_text on tricky strings and Austen sentences."""
    return PREPROCESS.check(fn)


def check_pair_layout(fn) -> bool:
    """Check `fn(ids_a, ids_b=None)` returns ([CLS] A [SEP] (B [SEP]), token types) like Tokenizer.encode_pair."""
    return PAIR_LAYOUT.check(fn)


def check_truncate_longest_first(fn) -> bool:
    """Check `fn(ids_a, ids_b, max_total)` against ALBERT's fine-tuning truncation rule."""
    return TRUNCATE.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "albert_preprocess": [preprocess_text],
    "pair_layout": [Tokenizer.encode_pair],
    "truncate_longest_first": [truncate_longest_first],
}
KEY_NUMBERS: dict[str, list] = {}
