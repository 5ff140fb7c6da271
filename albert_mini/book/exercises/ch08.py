"""Checks for Chapter 8 (fine-tuning): packing a RACE row, a character span to tokens, SQuAD's token F1."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ...specials import CLS_ID, SEP_ID
from ...tasks.features import answer_token_span as package_answer_token_span
from ...tasks.features import race_pack as package_race_pack
from ...tasks.squad_metrics import f1 as package_f1
from ...tasks.squad_metrics import normalize_answer
from .checking import check_against_reference

# Passage and question+option ids come from two ranges that never meet, so a packed row reads as runs.
PASSAGE_FIRST_ID, QA_FIRST_ID = 100, 5000
_SPECIAL_NAMES = {CLS_ID: "[CLS]", SEP_ID: "[SEP]"}


# ------------------------------------------------------------------------------------------- references
def race_pack(passage_ids: Sequence[int], qa_ids: Sequence[int], max_length: int,
              max_qa_length: int) -> tuple[list[int], list[int]]:
    """`[CLS] passage [SEP] qa [SEP]`: qa keeps its last max_qa_length ids, the passage is cut at its end."""
    return package_race_pack(passage_ids, qa_ids, max_length, max_qa_length)


def answer_token_span(offsets: Sequence[tuple[int, int]], char_start: int, char_end: int) -> tuple[int, int] | None:
    """First and last token covering characters [char_start, char_end), or None when no token does."""
    return package_answer_token_span(offsets, char_start, char_end)


def squad_f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD v1.1 token F1 after normalisation, the best over the gold answers."""
    return package_f1(prediction, golds)


# ------------------------------------------------------------------------------------------- race_pack
class _Ids(list):
    """A list of ids that describes itself as a run ("40 ids: 100..139") in feedback, so inputs stay readable."""

    def __repr__(self) -> str:
        if len(self) <= 6:
            return super().__repr__()
        return f"<{len(self)} ids: {self[0]}..{self[-1]}>"


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


def _as_int_list(value: Any, what: str) -> list[int]:
    if hasattr(value, "tolist"):  # a tensor or an array
        value = value.tolist()
    try:
        return [int(v) for v in value]
    except (TypeError, ValueError):
        raise ValueError(f"{what} should be a list of ints, got {type(value).__name__}") from None


def _packed_summary(packed: Any) -> str:
    """A readable, comparable form of (input_ids, token_type_ids): runs of ids and of segment types."""
    if not isinstance(packed, (tuple, list)) or len(packed) != 2:
        raise ValueError(f"returned {type(packed).__name__}; return a pair (input_ids, token_type_ids)")
    ids, types = _as_int_list(packed[0], "input_ids"), _as_int_list(packed[1], "token_type_ids")
    return (f"input_ids ({len(ids)}): {_runs(ids, consecutive=True)} | "
            f"token_type_ids ({len(types)}): {_runs(types, consecutive=False)}")


def _race_cases(seed: int = 8) -> list[tuple[tuple, dict]]:
    """(passage length, qa length, max_length, max_qa_length): fixed traps first, then seeded random ones."""
    fixed = [
        (10, 5, 32, 8),  # everything fits
        (40, 5, 32, 8),  # the passage is cut at its end
        (10, 12, 32, 8),  # qa keeps its last 8 ids
        (40, 12, 32, 8),  # both are cut
        (40, 8, 32, 8),  # qa exactly max_qa_length
        (100, 3, 20, 16),  # a short qa leaves the rest of max_length to the passage
        (0, 4, 16, 8),  # no passage at all
        (600, 150, 512, 128),  # the reference's RACE setting
        (300, 20, 128, 64),  # this book's setting
    ]
    rng = random.Random(seed)
    drawn = []
    for _ in range(12):
        max_length = rng.randint(8, 200)
        max_qa = rng.randint(1, max_length - 4)
        drawn.append((rng.randint(0, 2 * max_length), rng.randint(1, 2 * max_qa), max_length, max_qa))
    return [((_Ids(range(PASSAGE_FIRST_ID, PASSAGE_FIRST_ID + n)), _Ids(range(QA_FIRST_ID, QA_FIRST_ID + m))),
             {"max_length": length, "max_qa_length": qa_length}) for n, m, length, qa_length in fixed + drawn]


def check_race_pack(fn) -> bool:
    """Check `fn(passage_ids, qa_ids, max_length, max_qa_length)` -> (input_ids, token_type_ids) on 21 cases."""
    return check_against_reference(
        f"race_pack (passage ids start at {PASSAGE_FIRST_ID}, question+option ids at {QA_FIRST_ID})",
        lambda *args, **kwargs: _packed_summary(fn(*args, **kwargs)),
        lambda *args, **kwargs: _packed_summary(race_pack(*args, **kwargs)), _race_cases(),
        hint="keep the LAST max_qa_length ids of qa (the option sits at its end); the passage keeps its FIRST "
             "max_length - 3 - len(kept qa) ids; types are 0 for [CLS] passage [SEP] and 1 for qa [SEP].",
    )


# ------------------------------------------------------------------------------------------- answer spans
# What Tokenizer.encode_with_offsets gives for "Emma's father, Mr. Woodhouse": ▁emma ' s ▁father , ▁mr . ▁woodhouse
_NAME_OFFSETS = [(0, 4), (4, 5), (5, 6), (7, 13), (13, 14), (15, 17), (17, 18), (19, 28)]
# ... and for "she ☺ hurried home": ▁she ▁ <unk> ▁hurried ▁home; the lone "▁" before the unknown character has
# the empty span (4, 4).
_EMPTY_OFFSETS = [(0, 3), (4, 4), (4, 5), (6, 13), (14, 18)]


def _random_offsets(rng: random.Random) -> list[tuple[int, int]]:
    """Pieces of 1-6 characters, some glued to the previous one, some empty (a lone "▁")."""
    offsets, position = [], 0
    for _ in range(rng.randint(1, 9)):
        position += rng.choice([0, 1, 1])  # glued to the previous piece, or after a space
        if rng.random() < 0.1:
            offsets.append((position, position))
            continue
        length = rng.randint(1, 6)
        offsets.append((position, position + length))
        position += length
    return offsets


def _span_cases(seed: int = 8) -> list[tuple[tuple, dict]]:
    fixed = [
        (_NAME_OFFSETS, 0, 4),  # "emma": the next piece starts right where the answer ends
        (_NAME_OFFSETS, 7, 13),  # "father", followed by a comma at 13
        (_NAME_OFFSETS, 15, 28),  # "mr. woodhouse": three pieces
        (_NAME_OFFSETS, 0, 28),  # everything
        (_NAME_OFFSETS, 8, 11),  # inside one piece
        (_NAME_OFFSETS, 2, 5),  # starts inside a piece, ends inside the next
        (_NAME_OFFSETS, 6, 7),  # only the space between two pieces: no piece covers it
        (_NAME_OFFSETS, 28, 31),  # after the last piece
        (_EMPTY_OFFSETS, 4, 5),  # must not start at the empty-span piece
        (_EMPTY_OFFSETS, 0, 13),
        (_EMPTY_OFFSETS, 4, 13),
    ]
    rng = random.Random(seed)
    drawn = []
    while len(drawn) < 16:
        offsets = _random_offsets(rng)
        end_of_text = max(e for _, e in offsets) + 2
        start = rng.randint(0, end_of_text)
        drawn.append((offsets, start, rng.randint(start + 1, end_of_text + 1)))
    return [((list(offsets),), {"char_start": start, "char_end": end}) for offsets, start, end in fixed + drawn]


def _as_span(value: Any) -> Any:
    """(first, last) as a tuple of Python ints, so a list or numpy ints compare equal; None stays None."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        try:
            return int(value[0]), int(value[1])
        except (TypeError, ValueError):
            return value
    return value


def check_answer_token_span(fn) -> bool:
    """Check `fn(offsets, char_start, char_end)` -> (first token, last token) or None, on 27 cases."""
    return check_against_reference(
        "answer_token_span", lambda *args, **kwargs: _as_span(fn(*args, **kwargs)), answer_token_span, _span_cases(),
        hint="char_end is one PAST the answer's last character. The first token is the first non-empty one that "
             "ends after char_start; the last is the last non-empty one that starts before char_end. Skip pieces "
             "whose span is empty (start == end), and return None when no token lies inside the answer.",
    )


# ------------------------------------------------------------------------------------------- SQuAD F1
_WORDS = ["Emma", "Harriet", "Knightley", "Mr.", "letter", "ball", "the", "a", "an", "of"]
_ATTACHED = ["", "", "", ",", ".", "!", ";", '"', "'s"]


def _random_answer(rng: random.Random, words: list[str]) -> str:
    """`words` dressed up as text: trailing punctuation, sometimes upper case, single or double spaces."""
    dressed = [w + rng.choice(_ATTACHED) for w in words]
    if rng.random() < 0.3:
        dressed[0] = dressed[0].upper()
    return rng.choice([" ", "  "]).join(dressed)


def _random_golds(rng: random.Random, words: list[str]) -> list[str]:
    """1-3 gold answers: some overlap the predicted words (a word dropped or added), some are unrelated."""
    golds = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.7:
            gold = [w for w in words if rng.random() < 0.7] + rng.sample(_WORDS, rng.randint(0, 2))
        else:
            gold = rng.sample(_WORDS, rng.randint(1, 3))
        golds.append(_random_answer(rng, gold or [rng.choice(_WORDS)]))
    return golds


def _f1_cases(seed: int = 8) -> list[tuple[tuple, dict]]:
    fixed = [
        ("Emma", ["Emma"]),
        ("the Emma,", ["Emma"]),  # articles and punctuation are not part of the answer
        ("An  ENGAGEMENT!", ["engagement"]),
        ("Miss Emma Woodhouse", ["Emma"]),  # precision 1/3, recall 1
        ("Mr. Knightley", ["Knightley", "Mr. Knightley"]),  # the second gold answer matches exactly
        ("Harriet", ["Mr. Elton", "Harriet Smith"]),  # only the second gold answer shares a word
        ("Jane Jane Fairfax", ["Jane Fairfax"]),  # a repeated word counts once per occurrence in the gold
        ("", ["Emma"]),  # no answer predicted
        ("the", ["a Harriet"]),  # normalises to nothing
        ("Frank Churchill's letter", ["Churchill's letter to Mrs. Weston", "his letter"]),
    ]
    rng = random.Random(seed)
    drawn = []
    for _ in range(20):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 5))]
        drawn.append((_random_answer(rng, words), _random_golds(rng, words)))
    return [((prediction, list(golds)), {}) for prediction, golds in fixed + drawn]


def check_squad_f1(fn) -> bool:
    """Check `fn(prediction, golds)` -> SQuAD v1.1 token F1 in [0, 1] on 30 cases."""
    return check_against_reference(
        "squad_f1", fn, squad_f1, _f1_cases(), rtol=1e-6, atol=1e-9,
        hint="normalise both sides (lower case, remove string.punctuation, drop the words a/an/the, split on "
             "whitespace); count shared words with multiplicity (collections.Counter &); F1 = 2PR / (P + R), 0 when "
             "nothing is shared; return the best F1 over the gold answers.",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "race_pack": [package_race_pack],
    "answer_token_span": [package_answer_token_span],
    "squad_f1": [package_f1, normalize_answer],
}
KEY_NUMBERS: dict[str, list] = {}
