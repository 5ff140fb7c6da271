"""Chapter 8's exercise checks: they pass the references and independent answers, and reject plausible mistakes."""

import re
import string
from collections import Counter

import numpy as np
import pytest
import torch

from albert_mini.book.exercises import ExerciseFailed, ch08, check_answer_token_span, check_race_pack, check_squad_f1
from albert_mini.text.tokenizer import Tokenizer

CLS, SEP = 2, 3


def not_written(*args, **kwargs):
    raise NotImplementedError("write your solution here")


# ------------------------------------------------------------------ learner-style answers written independently
def pack_by_hand(passage_ids, qa_ids, max_length, max_qa_length):
    qa = list(qa_ids)
    if len(qa) > max_qa_length:
        qa = qa[len(qa) - max_qa_length:]
    room = max_length - 3 - len(qa)
    passage = list(passage_ids)[:room]
    ids = [CLS] + passage + [SEP] + qa + [SEP]
    types = [0] * (1 + len(passage) + 1) + [1] * (len(qa) + 1)
    return ids, types


def pack_as_tensors(passage_ids, qa_ids, max_length, max_qa_length):
    ids, types = pack_by_hand(passage_ids, qa_ids, max_length, max_qa_length)
    return torch.tensor(ids), np.array(types)


def span_by_scanning(offsets, char_start, char_end):
    first = last = None
    for index, (start, end) in enumerate(offsets):
        if start == end:
            continue  # a lone "▁" covers no character
        if first is None and end > char_start:
            first = index
        if start < char_end:
            last = index
    if first is None or last is None or first > last:
        return None
    return [first, last]  # a list is as good as a tuple


def normalise(text):
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return text.split()


def f1_by_hand(prediction, golds):
    best = 0.0
    for gold in golds:
        p, g = normalise(prediction), normalise(gold)
        same = sum((Counter(p) & Counter(g)).values())
        if same:
            precision, recall = same / len(p), same / len(g)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


# ------------------------------------------------------------------ the references on hand-computed cases
def test_race_pack_reference_by_hand():
    ids, types = ch08.race_pack(list(range(100, 140)), list(range(500, 512)), 32, 8)
    assert ids == [CLS, *range(100, 121), SEP, *range(504, 512), SEP]
    assert types == [0] * 23 + [1] * 9
    assert len(ids) == 32


def test_answer_span_reference_on_a_real_tokenization():
    text = "Emma's father, Mr. Woodhouse, was fond of every body."
    _, offsets = Tokenizer.default().encode_with_offsets(text)
    assert offsets[:8] == ch08._NAME_OFFSETS  # the check's fixed offsets are what the tokenizer produces
    for answer, expected in (("Emma", (0, 0)), ("father", (3, 3)), ("Mr. Woodhouse", (5, 7))):
        start = text.index(answer)
        assert ch08.answer_token_span(offsets, start, start + len(answer)) == expected
    assert ch08.answer_token_span(offsets, 6, 7) is None  # the space alone


def test_squad_f1_reference_by_hand():
    assert ch08.squad_f1("Miss Emma Woodhouse", ["Emma"]) == pytest.approx(0.5)
    assert ch08.squad_f1("Jane Jane Fairfax", ["Jane Fairfax"]) == pytest.approx(0.8)
    assert ch08.squad_f1("Harriet", ["Mr. Elton", "Harriet Smith"]) == pytest.approx(2 / 3)
    assert ch08.squad_f1("the Emma,", ["Emma"]) == 1.0
    assert ch08.squad_f1("", ["Emma"]) == 0.0


# ------------------------------------------------------------------ the checks accept right answers
def test_checks_pass_on_references_and_independent_answers(capsys):
    assert check_race_pack(ch08.race_pack)
    assert check_race_pack(pack_by_hand)
    assert check_race_pack(pack_as_tensors)
    assert check_answer_token_span(ch08.answer_token_span)
    assert check_answer_token_span(span_by_scanning)
    assert check_squad_f1(ch08.squad_f1)
    assert check_squad_f1(f1_by_hand)
    assert "agree with the reference" in capsys.readouterr().out


@pytest.mark.parametrize("check", [check_race_pack, check_answer_token_span, check_squad_f1])
def test_checks_report_a_stub(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


# ------------------------------------------------------------------ race_pack: plausible mistakes
def first_qa_tokens(passage_ids, qa_ids, max_length, max_qa_length):
    """Keeps the FIRST qa tokens, cutting off the option at the end."""
    qa = list(qa_ids)[:max_qa_length]
    return pack_by_hand(passage_ids, qa, max_length, max_qa_length)


def passage_from_front(passage_ids, qa_ids, max_length, max_qa_length):
    """Truncates the passage at its start (keeps its last tokens)."""
    qa = list(qa_ids)[-max_qa_length:]
    room = max_length - 3 - len(qa)
    passage = list(passage_ids)[-room:] if len(passage_ids) > room else list(passage_ids)
    return [CLS, *passage, SEP, *qa, SEP], [0] * (len(passage) + 2) + [1] * (len(qa) + 1)


def reserves_max_qa(passage_ids, qa_ids, max_length, max_qa_length):
    """Always leaves max_qa_length tokens for qa, even when qa is shorter."""
    qa = list(qa_ids)[-max_qa_length:]
    passage = list(passage_ids)[:max_length - 3 - max_qa_length]
    return [CLS, *passage, SEP, *qa, SEP], [0] * (len(passage) + 2) + [1] * (len(qa) + 1)


def forgets_specials_in_budget(passage_ids, qa_ids, max_length, max_qa_length):
    """Gives the passage max_length - len(qa) tokens: the row comes out 3 tokens too long."""
    qa = list(qa_ids)[-max_qa_length:]
    passage = list(passage_ids)[:max_length - len(qa)]
    return [CLS, *passage, SEP, *qa, SEP], [0] * (len(passage) + 2) + [1] * (len(qa) + 1)


def last_sep_in_segment_a(passage_ids, qa_ids, max_length, max_qa_length):
    """Gives the final [SEP] type 0."""
    ids, types = pack_by_hand(passage_ids, qa_ids, max_length, max_qa_length)
    return ids, types[:-1] + [0]


@pytest.mark.parametrize("wrong", [first_qa_tokens, passage_from_front, reserves_max_qa, forgets_specials_in_budget,
                                   last_sep_in_segment_a])
def test_race_pack_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_race_pack(wrong)


def test_race_pack_feedback_shows_runs_of_ids():
    with pytest.raises(ExerciseFailed) as caught:
        check_race_pack(first_qa_tokens)
    message = str(caught.value)
    assert "5000..5007" in message and "5004..5011" in message  # got the first 8 qa ids, expected the last 8
    assert "<12 ids: 5000..5011>" in message and "hint:" in message
    assert "task_inputs" not in message and "def race_pack" not in message


def test_race_pack_rejects_a_single_list():
    with pytest.raises(ExerciseFailed, match="pair"):
        check_race_pack(lambda p, q, max_length, max_qa_length: pack_by_hand(p, q, max_length, max_qa_length)[0])


# ------------------------------------------------------------------ answer_token_span: plausible mistakes
def inclusive_end(offsets, char_start, char_end):
    """Treats char_end as the answer's last character: takes the token that starts at char_end too."""
    return span_by_scanning(offsets, char_start, char_end + 1)


def last_index_exclusive(offsets, char_start, char_end):
    """Returns one past the last token, like a Python slice."""
    span = span_by_scanning(offsets, char_start, char_end)
    return None if span is None else (span[0], span[1] + 1)


def contained_tokens_only(offsets, char_start, char_end):
    """Takes only tokens lying wholly inside the answer."""
    inside = [i for i, (s, e) in enumerate(offsets) if s < e and s >= char_start and e <= char_end]
    return (inside[0], inside[-1]) if inside else None


def empty_pieces_count(offsets, char_start, char_end):
    """Does not skip the empty span of a lone "▁" piece, which "starts" at the answer's first character."""
    starts = [i for i, (s, e) in enumerate(offsets) if e > char_start or s >= char_start]
    ends = [i for i, (s, e) in enumerate(offsets) if s < char_end]
    if not starts or not ends or starts[0] > ends[-1]:
        return None
    return starts[0], ends[-1]


def never_none(offsets, char_start, char_end):
    """Falls back to (0, 0) instead of saying that no token covers the answer."""
    return span_by_scanning(offsets, char_start, char_end) or (0, 0)


@pytest.mark.parametrize("wrong", [inclusive_end, last_index_exclusive, contained_tokens_only, empty_pieces_count,
                                   never_none])
def test_answer_span_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_answer_token_span(wrong)


# ------------------------------------------------------------------ squad_f1: plausible mistakes
def f1_without_normalisation(prediction, golds):
    best = 0.0
    for gold in golds:
        p, g = prediction.split(), gold.split()
        same = sum((Counter(p) & Counter(g)).values())
        if same:
            best = max(best, 2 * same / (len(p) + len(g)))
    return best


def f1_first_gold_only(prediction, golds):
    return f1_by_hand(prediction, golds[:1])


def f1_mean_over_golds(prediction, golds):
    return sum(f1_by_hand(prediction, [g]) for g in golds) / len(golds)


def f1_of_word_sets(prediction, golds):
    best = 0.0
    for gold in golds:
        p, g = set(normalise(prediction)), set(normalise(gold))
        if p & g:
            precision, recall = len(p & g) / len(p), len(p & g) / len(g)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def f1_keeping_articles(prediction, golds):
    def words(text):
        return "".join(ch for ch in text.lower() if ch not in set(string.punctuation)).split()

    best = 0.0
    for gold in golds:
        same = sum((Counter(words(prediction)) & Counter(words(gold))).values())
        if same:
            best = max(best, 2 * same / (len(words(prediction)) + len(words(gold))))
    return best


@pytest.mark.parametrize("wrong", [f1_without_normalisation, f1_first_gold_only, f1_mean_over_golds, f1_of_word_sets,
                                   f1_keeping_articles])
def test_f1_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_squad_f1(wrong)


def test_f1_check_reports_a_crash_with_its_input():
    def divides_by_zero(prediction, golds):
        p = normalise(prediction)
        return max(len(p) / len(p) * f1_by_hand(prediction, [g]) for g in golds)

    with pytest.raises(ExerciseFailed, match="ZeroDivisionError") as caught:
        check_squad_f1(divides_by_zero)
    assert "on input" in str(caught.value)
