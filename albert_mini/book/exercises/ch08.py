"""Checks for Chapter 8 (fine-tuning): packing a RACE row, a character span to tokens, SQuAD's token F1."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...specials import CLS_ID, SEP_ID
from ...tasks.features import answer_token_span as package_answer_token_span
from ...tasks.features import race_pack as package_race_pack
from ...tasks.squad_metrics import f1 as package_f1
from ...tasks.squad_metrics import normalize_answer
from .checking import Case, Exercise, Mistake, WrongForm, int_list, kind_of, number

# Passage and question+option ids come from two ranges that never meet, so a packed row reads as runs.
PASSAGE_FIRST_ID, QA_FIRST_ID = 100, 5000
_SPECIAL_NAMES = {CLS_ID: "[CLS]", SEP_ID: "[SEP]"}
# The package functions that answer an exercise, switched off while the learner's function is checked.
_FEATURES, _METRICS = "albert_mini.tasks.features", "albert_mini.tasks.squad_metrics"


def _pick(rng: np.random.Generator, items: Sequence):
    """One item of a list (a Python value: rng.choice would give numpy strings)."""
    return items[int(rng.integers(len(items)))]


# ------------------------------------------------------------------------------------------- Exercise A
# The references are written here, apart from the package's functions (those are switched off while an answer,
# the reference included, is checked); tests/book/test_exercises_ch08.py shows that they agree with the package,
# and tests/book/test_exercises_twins.py compares each word-for-word copy with its original on every case.
def race_pack(passage_ids: Sequence[int], qa_ids: Sequence[int], max_length: int,
              max_qa_length: int) -> tuple[list[int], list[int]]:
    """`[CLS] passage [SEP] qa [SEP]`: qa keeps its last max_qa_length ids, the passage is cut at its end."""
    qa = list(qa_ids)[-max_qa_length:]
    passage = list(passage_ids)[:max_length - 3 - len(qa)]
    return [CLS_ID, *passage, SEP_ID, *qa, SEP_ID], [0] * (len(passage) + 2) + [1] * (len(qa) + 1)


def _runs(values: list[int], consecutive: bool) -> str:
    """Compress values into runs: "100..123" for consecutive ids (consecutive=True), "0 x 26" for repeats."""
    step = 1 if consecutive else 0
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        mergeable = not (consecutive and values[i] in _SPECIAL_NAMES)  # [CLS] and [SEP] always stand alone
        while mergeable and j + 1 < len(values) and values[j + 1] == values[j] + step:
            j += 1
        if consecutive:
            parts.append(_SPECIAL_NAMES.get(values[i], str(values[i])) if j == i else f"{values[i]}..{values[j]}")
        else:
            parts.append(f"{values[i]} x {j - i + 1}")
        i = j + 1
    return " ".join(parts) if parts else "(empty)"


def packed_row(value: Any) -> str:
    """(input_ids, token_type_ids) in a readable, comparable form: runs of ids and of segment types."""
    if type(value) not in (tuple, list) or len(value) != 2:
        raise WrongForm(f"returned {kind_of(value)}; return a pair (input_ids, token_type_ids)")
    ids, types = int_list(value[0], "input_ids"), int_list(value[1], "token_type_ids")
    return (f"input_ids ({len(ids)}): {_runs(ids, consecutive=True)} | "
            f"token_type_ids ({len(types)}): {_runs(types, consecutive=False)}")


def _race_case(n: int, m: int, max_length: int, max_qa_length: int, trap: str = "") -> Case:
    passage = list(range(PASSAGE_FIRST_ID, PASSAGE_FIRST_ID + n))
    qa = list(range(QA_FIRST_ID, QA_FIRST_ID + m))
    shown = (f"passage {n} ids ({PASSAGE_FIRST_ID}..{PASSAGE_FIRST_ID + n - 1})" if n else "no passage") + (
        f", question+option {m} ids ({QA_FIRST_ID}..{QA_FIRST_ID + m - 1})")
    return Case((passage, qa), {"max_length": max_length, "max_qa_length": max_qa_length},
                note=shown + (f": {trap}" if trap else ""))


def _race_drawn(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(12):
        max_length = int(rng.integers(8, 201))
        max_qa = int(rng.integers(1, max_length - 3))
        cases.append(_race_case(int(rng.integers(0, 2 * max_length + 1)), int(rng.integers(1, 2 * max_qa + 1)),
                                max_length, max_qa))
    return cases


def _packs_like(variant):
    """A mistake test: the answer is what `variant(passage, qa, max_length, max_qa_length)` packs."""
    def test(got, expected, args, kwargs):
        return got != expected and got == packed_row(variant(*args, kwargs["max_length"], kwargs["max_qa_length"]))
    return test


def _row(passage, qa, types=None):
    ids = [CLS_ID, *passage, SEP_ID, *qa, SEP_ID]
    return ids, types or [0] * (len(passage) + 2) + [1] * (len(qa) + 1)


RACE_PACK = Exercise(
    "race_pack", "08", race_pack,
    [_race_case(10, 5, 32, 8, "everything fits"), _race_case(40, 5, 32, 8, "the passage is cut"),
     _race_case(10, 12, 32, 8, "the question+option text is cut"), _race_case(40, 12, 32, 8, "both are cut"),
     _race_case(40, 8, 32, 8, "question+option exactly max_qa_length"),
     _race_case(100, 3, 20, 16, "a short question+option leaves its room to the passage"),
     _race_case(0, 4, 16, 8), _race_case(600, 150, 512, 128, "the reference's RACE setting"),
     _race_case(300, 20, 128, 64, "this book's setting")],
    drawn=_race_drawn, normalize=packed_row, unavailable=(f"{_FEATURES}:race_pack",),
    title=f"race_pack (passage ids count up from {PASSAGE_FIRST_ID}, question+option ids from {QA_FIRST_ID})",
    hints=("revisit the packing rule: which end of each part is kept, and what takes room in a row of "
           "max_length tokens.",
           "count the passage ids in the failing case's expected row and work out where that number comes from."),
    mistakes=(
        Mistake(_packs_like(lambda p, q, length, qa_length: _row(p[:length - 3 - len(q[:qa_length])],
                                                                 q[:qa_length])),
                "the question+option text keeps its LAST max_qa_length ids: the option, which is being scored, "
                "sits at its end."),
        Mistake(_packs_like(lambda p, q, length, qa_length: _row(
                    p[max(0, len(p) - (length - 3 - len(q[-qa_length:]))):], q[-qa_length:])),
                "the passage keeps its start and loses its end."),
        Mistake(lambda got, want, args, kw: int(got.split("(")[1].split(")")[0]) > kw["max_length"],
                "the row is longer than max_length: [CLS] and the two [SEP]s take room too."),
        Mistake(_packs_like(lambda p, q, length, qa_length: _row(p[:length - 3 - qa_length], q[-qa_length:])),
                "a short question+option leaves its unused room to the passage: the passage gets what the kept "
                "question+option does not use."),
        Mistake(lambda got, want, args, kw: got != want and got.split(" | ")[0] == want.split(" | ")[0],
                "the ids are right, the segment types are not: 0 from [CLS] through the first [SEP], 1 after it "
                "through the last [SEP]."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise B
def answer_token_span(offsets: Sequence[tuple[int, int]], char_start: int, char_end: int) -> tuple[int, int] | None:
    """First and last token covering characters [char_start, char_end), or None when no token does."""
    starts = [i for i, (s, e) in enumerate(offsets) if s < e and e > char_start]
    ends = [i for i, (s, e) in enumerate(offsets) if s < e and s < char_end]
    if not starts or not ends or starts[0] > ends[-1]:
        return None
    return starts[0], ends[-1]


# What Tokenizer.encode_with_offsets gives for "Emma's father, Mr. Woodhouse": ▁emma ' s ▁father , ▁mr . ▁woodhouse
_NAME_OFFSETS = [(0, 4), (4, 5), (5, 6), (7, 13), (13, 14), (15, 17), (17, 18), (19, 28)]
# ... and for "she ☺ hurried home": ▁she ▁ <unk> ▁hurried ▁home; the lone "▁" before the unknown character has
# the empty span (4, 4).
_EMPTY_OFFSETS = [(0, 3), (4, 4), (4, 5), (6, 13), (14, 18)]


def _random_offsets(rng: np.random.Generator) -> list[tuple[int, int]]:
    """Pieces of 1-6 characters, some glued to the previous one, some empty (a lone "▁")."""
    offsets, position = [], 0
    for _ in range(int(rng.integers(1, 10))):
        position += _pick(rng, [0, 1, 1])  # glued to the previous piece, or after a space
        if rng.random() < 0.1:
            offsets.append((position, position))
            continue
        length = int(rng.integers(1, 7))
        offsets.append((position, position + length))
        position += length
    return offsets


def _span_case(offsets, start: int, end: int, note: str = "") -> Case:
    return Case((list(offsets),), {"char_start": start, "char_end": end}, note=note)


def _span_drawn(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(16):
        offsets = _random_offsets(rng)
        end_of_text = max(e for _, e in offsets) + 2
        start = int(rng.integers(0, end_of_text + 1))
        cases.append(_span_case(offsets, start, int(rng.integers(start + 1, end_of_text + 2))))
    return cases


def token_span(value: Any) -> tuple[int, int] | None:
    """(first, last) as a tuple of Python ints (a list or numpy ints are as good); None stays None."""
    if value is None:
        return None
    if type(value) not in (tuple, list) or len(value) != 2:
        raise WrongForm(f"returned {kind_of(value)}; return (first token, last token), or None")
    first, last = int_list(list(value), "the span")
    return first, last


def _empty_piece(got, args) -> bool:
    return got is not None and any(args[0][i][0] == args[0][i][1] for i in got)


ANSWER_SPAN = Exercise(
    "answer_token_span", "08", answer_token_span,
    [_span_case(_NAME_OFFSETS, 0, 4, "\"Emma\": the next piece starts right where the answer ends"),
     _span_case(_NAME_OFFSETS, 7, 13, "\"father\", followed by a comma at 13"),
     _span_case(_NAME_OFFSETS, 15, 28, "\"Mr. Woodhouse\": three pieces"),
     _span_case(_NAME_OFFSETS, 0, 28, "everything"),
     _span_case(_NAME_OFFSETS, 8, 11, "inside one piece"),
     _span_case(_NAME_OFFSETS, 2, 5, "starts inside a piece, ends inside the next"),
     _span_case(_NAME_OFFSETS, 6, 7, "only the space between two pieces"),
     _span_case(_NAME_OFFSETS, 28, 31, "after the last piece"),
     _span_case(_EMPTY_OFFSETS, 4, 5, "a piece with an empty span at the answer's start"),
     _span_case(_EMPTY_OFFSETS, 0, 13), _span_case(_EMPTY_OFFSETS, 4, 13)],
    drawn=_span_drawn, normalize=token_span, unavailable=(f"{_FEATURES}:answer_token_span",),
    hints=("revisit what a pair of offsets means (its end is exclusive, like char_end) and what it takes for a "
           "token to share characters with the answer.",
           "draw the failing case on paper: each token's characters as a bar, the answer's characters under "
           "them, and mark the tokens whose bars meet the answer's."),
    mistakes=(
        Mistake(lambda got, want, args, kw: _empty_piece(got, args),
                "a piece with an empty span (start == end) covers no character: it never starts or ends an "
                "answer."),
        Mistake(lambda got, want, args, kw: got is not None and args[0][got[0]][1] == kw["char_start"],
                "your first token ends where the answer starts: a piece must end after char_start to share a "
                "character with it."),
        Mistake(lambda got, want, args, kw: got is not None and args[0][got[1]][0] == kw["char_end"],
                "one token too far at the end: char_end is one past the answer's last character, and the last "
                "token you return is inclusive."),
        Mistake(lambda got, want, args, kw: want is None and got is not None,
                "no piece shares a character with these (they fall between pieces, or after the text): return "
                "None."),
        Mistake(lambda got, want, args, kw: want is not None and got is None,
                "some piece does share characters with the answer: a piece that holds only part of it counts."),
        Mistake(lambda got, want, args, kw: got[0] > want[0] or got[1] < want[1],
                "you dropped a token at an edge: a piece that holds the answer's first (or last) character "
                "counts, even when it begins before (or ends after) the answer."),
    ),
)

# ------------------------------------------------------------------------------------------- Exercise C
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _words(text: str, lower=True, punctuation=True, articles=True) -> list[str]:
    """SQuAD's normalisation as a list of words; each step can be left out, for the mistakes below."""
    if lower:
        text = text.lower()
    if punctuation:
        text = "".join(c for c in text if c not in string.punctuation)
    if articles:
        text = _ARTICLES.sub(" ", text)
    return text.split()


def _f1(predicted: list[str], gold: list[str], bags=True, kind="f1") -> float:
    shared = sum((Counter(predicted) & Counter(gold)).values()) if bags else len(set(predicted) & set(gold))
    if shared == 0:
        return 0.0
    precision = shared / (len(predicted) if bags else len(set(predicted)))
    recall = shared / (len(gold) if bags else len(set(gold)))
    return {"f1": 2 * precision * recall / (precision + recall), "precision": precision, "recall": recall}[kind]


def squad_f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD v1.1 token F1 after normalisation, the best over the gold answers."""
    return max(_f1(_words(prediction), _words(gold)) for gold in golds)


_WORDS = ["Emma", "Harriet", "Knightley", "Mr.", "letter", "ball", "the", "a", "an", "of"]
_ATTACHED = ["", "", "", ",", ".", "!", ";", '"', "'s"]


def _random_answer(rng: np.random.Generator, words: list[str]) -> str:
    """`words` dressed up as text: trailing punctuation, sometimes upper case, single or double spaces."""
    dressed = [w + _pick(rng, _ATTACHED) for w in words]
    if rng.random() < 0.3:
        dressed[0] = dressed[0].upper()
    return _pick(rng, [" ", "  "]).join(dressed)


def _random_golds(rng: np.random.Generator, words: list[str]) -> list[str]:
    """1-3 gold answers: some overlap the predicted words (a word dropped or added), some are unrelated."""
    golds = []
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.7:
            gold = [w for w in words if rng.random() < 0.7] + [_pick(rng, _WORDS) for _ in range(rng.integers(3))]
        else:
            gold = [_pick(rng, _WORDS) for _ in range(rng.integers(1, 4))]
        golds.append(_random_answer(rng, gold or [_pick(rng, _WORDS)]))
    return golds


def _f1_drawn(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(20):
        words = [_pick(rng, _WORDS) for _ in range(int(rng.integers(1, 6)))]
        cases.append(Case((_random_answer(rng, words), _random_golds(rng, words))))
    return cases


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 + 1e-6 * abs(b)


def _scores_like(score):
    """A mistake test: the answer is what `score(prediction, golds)` gives, and the right one is not."""
    def test(got, expected, args, kwargs):
        return not _close(got, expected) and _close(got, score(*args))
    return test


def _best(**options):
    """The best score over the golds, with normalisation steps or scoring changed by `options`."""
    words = {k: v for k, v in options.items() if k in ("lower", "punctuation", "articles")}
    scoring = {k: v for k, v in options.items() if k in ("bags", "kind")}
    return lambda prediction, golds: max(_f1(_words(prediction, **words), _words(g, **words), **scoring)
                                         for g in golds)


SQUAD_F1 = Exercise(
    "squad_f1", "08", squad_f1,
    [Case((prediction, golds), note=note) for prediction, golds, note in [
        ("Emma", ["Emma"], ""),
        ("the Emma,", ["Emma"], "an article and punctuation"),
        ("An  ENGAGEMENT!", ["engagement"], ""),
        ("Miss Emma Woodhouse", ["Emma"], "a prediction longer than the gold answer"),
        ("Mr. Knightley", ["Knightley", "Mr. Knightley"], "two gold answers"),
        ("Harriet", ["Mr. Elton", "Harriet Smith"], "only the second gold answer shares a word"),
        ("Jane Jane Fairfax", ["Jane Fairfax"], "a repeated word"),
        ("", ["Emma"], "no answer predicted"),
        ("the", ["a Harriet"], "a prediction that normalises to nothing"),
        ("Frank Churchill's letter", ["Churchill's letter to Mrs. Weston", "his letter"], "")]],
    drawn=_f1_drawn, normalize=number, rtol=1e-6, atol=1e-9,
    unavailable=(f"{_METRICS}:f1", f"{_METRICS}:normalize_answer", f"{_METRICS}:_f1_one"),
    hints=("revisit the scoring section: what normalisation does to both answers, then how the shared words give "
           "precision, recall and F1.",
           "work the failing case by hand: normalise both sides, list their words, and count the shared ones."),
    mistakes=(
        Mistake(_scores_like(_best(lower=False)),
                "upper and lower case are the same letters after normalisation: compare lower-cased answers."),
        Mistake(_scores_like(_best(punctuation=False)),
                "punctuation is removed before the words are compared (\"Emma,\" and \"Emma\" are one word)."),
        Mistake(_scores_like(_best(articles=False)),
                "the words a, an and the are dropped before comparing."),
        Mistake(_scores_like(_best(bags=False)),
                "count a shared word as often as it occurs in both answers, not once: the answers are bags of "
                "words, not sets."),
        Mistake(_scores_like(lambda prediction, golds: _best()(prediction, golds[:1])),
                "score against every gold answer and keep the best, not only the first."),
        Mistake(_scores_like(lambda prediction, golds: sum(_best()(prediction, [g]) for g in golds) / len(golds)),
                "keep the best score over the gold answers, not their mean."),
        Mistake(_scores_like(_best(kind="precision")),
                "that is the precision alone: F1 combines it with the recall."),
        Mistake(_scores_like(_best(kind="recall")),
                "that is the recall alone: F1 combines it with the precision."),
    ),
)

EXERCISES = [RACE_PACK, ANSWER_SPAN, SQUAD_F1]


def check_race_pack(fn) -> bool:
    """Check `fn(passage_ids, qa_ids, max_length, max_qa_length)` -> (input_ids, token_type_ids)."""
    return RACE_PACK.check(fn)


def check_answer_token_span(fn) -> bool:
    """Check `fn(offsets, char_start, char_end)` -> (first token, last token) or None."""
    return ANSWER_SPAN.check(fn)


def check_squad_f1(fn) -> bool:
    """Check `fn(prediction, golds)` -> SQuAD v1.1 token F1 in [0, 1]."""
    return SQUAD_F1.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "race_pack": [package_race_pack, race_pack],
    "answer_token_span": [package_answer_token_span, answer_token_span],
    "squad_f1": [package_f1, normalize_answer, squad_f1, _f1],
}
KEY_NUMBERS: dict[str, list] = {}
