"""Chapter 8's exercise checks: the references agree with the package, the checks pass right answers, and they
reject stubs, plausible mistakes (each with its own hint) and cheats."""

import re
import string
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from exercise_helpers import (
    AlwaysEqual,
    SneakyFloat,
    SneakyList,
    fails_with,
    gives_nothing_away,
    gives_the_tiers_in_turn,
    grader_passes,
    passes_solutions_and_references,
    reports_a_stub,
)

from albert_mini.book.exercises import ch08, check_answer_token_span, check_race_pack, check_squad_f1
from albert_mini.tasks import features, squad_metrics
from albert_mini.text.tokenizer import Tokenizer

SOLUTIONS = Path(__file__).resolve().parents[2] / "chapters" / "solutions" / "08_fine_tuning.py"
CLS, SEP = 2, 3

pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


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


# ------------------------------------------------------------------ the references agree with the package
def test_race_pack_reference_is_the_packages_and_right_by_hand():
    ids, types = ch08.race_pack(list(range(100, 140)), list(range(500, 512)), 32, 8)
    assert ids == [CLS, *range(100, 121), SEP, *range(504, 512), SEP] and types == [0] * 23 + [1] * 9
    for case in ch08.RACE_PACK.cases(seed=5):
        assert ch08.race_pack(*case.args, **case.kwargs) == features.race_pack(*case.args, **case.kwargs)


def test_answer_span_reference_is_the_packages_on_a_real_tokenization():
    text = "Emma's father, Mr. Woodhouse, was fond of every body."
    _, offsets = Tokenizer.default().encode_with_offsets(text)
    assert offsets[:8] == ch08._NAME_OFFSETS  # the check's fixed offsets are what the tokenizer produces
    _, offsets_with_empty = Tokenizer.default().encode_with_offsets("she ☺ hurried home")
    assert offsets_with_empty == ch08._EMPTY_OFFSETS
    for answer, expected in (("Emma", (0, 0)), ("father", (3, 3)), ("Mr. Woodhouse", (5, 7))):
        start = text.index(answer)
        assert ch08.answer_token_span(offsets, start, start + len(answer)) == expected
    assert ch08.answer_token_span(offsets, 6, 7) is None  # the space alone
    for case in ch08.ANSWER_SPAN.cases(seed=5):
        assert ch08.answer_token_span(*case.args, **case.kwargs) == features.answer_token_span(*case.args,
                                                                                              **case.kwargs)


def test_squad_f1_reference_is_the_packages_and_right_by_hand():
    assert ch08.squad_f1("Miss Emma Woodhouse", ["Emma"]) == pytest.approx(0.5)
    assert ch08.squad_f1("Jane Jane Fairfax", ["Jane Fairfax"]) == pytest.approx(0.8)
    assert ch08.squad_f1("Harriet", ["Mr. Elton", "Harriet Smith"]) == pytest.approx(2 / 3)
    assert ch08.squad_f1("the Emma,", ["Emma"]) == 1.0 and ch08.squad_f1("", ["Emma"]) == 0.0
    for case in ch08.SQUAD_F1.cases(seed=5):
        assert ch08.squad_f1(*case.args) == squad_metrics.f1(*case.args)


# ------------------------------------------------------------------ the checks pass right answers
def test_checks_pass_the_solutions_the_references_and_independent_answers(capsys):
    passes_solutions_and_references(ch08, SOLUTIONS)
    assert check_race_pack(pack_by_hand) and check_race_pack(pack_as_tensors)
    assert check_answer_token_span(span_by_scanning) and check_squad_f1(f1_by_hand)
    assert "Well done!" in capsys.readouterr().out


@pytest.mark.parametrize("exercise, answer", [
    (ch08.RACE_PACK, pack_by_hand), (ch08.ANSWER_SPAN, span_by_scanning), (ch08.SQUAD_F1, f1_by_hand)],
    ids=lambda x: getattr(x, "name", ""))
def test_the_grader_passes_right_answers_on_cases_drawn_at_grading_time(exercise, answer):
    grader_passes(exercise, answer)


@pytest.mark.parametrize("check", [check_race_pack, check_answer_token_span, check_squad_f1])
def test_checks_report_a_stub(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ Exercise A
def first_qa_tokens(passage_ids, qa_ids, max_length, max_qa_length):
    """Keeps the FIRST qa tokens, cutting off the option at the end."""
    return pack_by_hand(passage_ids, list(qa_ids)[:max_qa_length], max_length, max_qa_length)


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


@pytest.mark.parametrize("wrong, hint", [
    (first_qa_tokens, "keeps its LAST max_qa_length ids"), (passage_from_front, "keeps its start and loses its end"),
    (reserves_max_qa, "leaves its unused room to the passage"),
    (forgets_specials_in_budget, "the row is longer than max_length"),
    (last_sep_in_segment_a, "the segment types are not"),
], ids=["first-qa", "passage-end", "reserves-max-qa", "no-room-for-specials", "last-sep-type"])
def test_race_pack_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_race_pack, wrong, capsys, "different answer", "hint:", hint)


def test_race_pack_feedback_shows_runs_of_ids(capsys):
    printed = fails_with(check_race_pack, first_qa_tokens, capsys)
    assert "5000..5007" in printed and "5004..5011" in printed  # got the first 8 qa ids, expected the last 8
    assert "question+option 12 ids (5000..5011)" in printed and "hint:" in printed
    assert "def race_pack" not in printed


def test_race_pack_rejects_a_single_list(capsys):
    fails_with(check_race_pack, lambda p, q, max_length, max_qa_length: pack_by_hand(p, q, max_length,
                                                                                     max_qa_length)[0],
               capsys, "return a pair")


# ------------------------------------------------------------------ Exercise B
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


def touching_counts(offsets, char_start, char_end):
    """Counts a piece that ends exactly where the answer starts (>= instead of >)."""
    starts = [i for i, (s, e) in enumerate(offsets) if s < e and e >= char_start]
    ends = [i for i, (s, e) in enumerate(offsets) if s < e and s < char_end]
    return (starts[0], ends[-1]) if starts and ends and starts[0] <= ends[-1] else None


@pytest.mark.parametrize("wrong, hint", [
    (inclusive_end, "one token too far at the end"), (last_index_exclusive, "one token too far at the end"),
    (contained_tokens_only, "a piece that holds only part of it counts"),
    (empty_pieces_count, "a piece with an empty span"), (never_none, "return None"),
    (touching_counts, "a piece must end after char_start"),
], ids=["inclusive-end", "exclusive-last", "contained-only", "empty-pieces", "never-none", "touching"])
def test_answer_span_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_answer_token_span, wrong, capsys, "different answer", "hint:", hint)


def test_the_hint_for_a_dropped_edge_token_is_its_own():
    """A span that loses a partly covered piece at one edge gets the hint about edges."""
    args, kwargs, want = (ch08._NAME_OFFSETS,), {"char_start": 2, "char_end": 5}, (0, 1)  # in "emma" and "'"
    hint = next(m.hint for m in ch08.ANSWER_SPAN.mistakes if m.test((1, 1), want, args, kwargs))
    assert "dropped a token at an edge" in hint


# ------------------------------------------------------------------ Exercise C
def f1_without_normalisation(prediction, golds):
    best = 0.0
    for gold in golds:
        p, g = prediction.lower().split(), gold.lower().split()
        same = sum((Counter(p) & Counter(g)).values())
        if same:
            best = max(best, 2 * same / (len(p) + len(g)))
    return best


def f1_case_sensitive(prediction, golds):
    def words(text):
        text = "".join(ch for ch in text if ch not in set(string.punctuation))
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    return max(_f1(words(prediction), words(g)) for g in golds)


def _f1(p, g):
    same = sum((Counter(p) & Counter(g)).values())
    return 2 * same / (len(p) + len(g)) if same else 0.0


def f1_keeping_articles(prediction, golds):
    def words(text):
        return "".join(ch for ch in text.lower() if ch not in set(string.punctuation)).split()

    return max(_f1(words(prediction), words(g)) for g in golds)


def f1_of_word_sets(prediction, golds):
    best = 0.0
    for gold in golds:
        p, g = set(normalise(prediction)), set(normalise(gold))
        if p & g:
            precision, recall = len(p & g) / len(p), len(p & g) / len(g)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def precision_only(prediction, golds):
    return max((sum((Counter(normalise(prediction)) & Counter(normalise(g))).values()) / len(normalise(prediction))
                if normalise(prediction) else 0.0) for g in golds)


@pytest.mark.parametrize("wrong, hint", [
    (f1_without_normalisation, "punctuation is removed"), (f1_case_sensitive, "upper and lower case"),
    (f1_keeping_articles, "a, an and the are dropped"), (f1_of_word_sets, "not sets"),
    (lambda prediction, golds: f1_by_hand(prediction, golds[:1]), "not only the first"),
    (lambda prediction, golds: sum(f1_by_hand(prediction, [g]) for g in golds) / len(golds), "not their mean"),
    (precision_only, "that is the precision alone"),
], ids=["no-normalisation", "case", "articles", "sets", "first-gold", "mean-gold", "precision"])
def test_f1_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_squad_f1, wrong, capsys, "different answer", "hint:", hint)


def test_f1_check_reports_a_crash_with_its_input(capsys):
    def divides_by_zero(prediction, golds):
        p = normalise(prediction)
        return max(len(p) / len(p) * f1_by_hand(prediction, [g]) for g in golds)

    fails_with(check_squad_f1, divides_by_zero, capsys, "ZeroDivisionError", "on input")


# ------------------------------------------------------------------ cheats
@pytest.mark.parametrize("check, cheat", [
    (check_race_pack, lambda *args, **kwargs: AlwaysEqual()),
    (check_race_pack, lambda *args, **kwargs: (SneakyList(), SneakyList())),
    (check_answer_token_span, lambda offsets, char_start, char_end: AlwaysEqual()),
    (check_squad_f1, lambda prediction, golds: SneakyFloat(0.5)),
], ids=["eq-pair", "list-subclass", "eq-span", "float-subclass"])
def test_checks_reject_objects_that_claim_to_be_equal(check, cheat, capsys):
    fails_with(check, cheat, capsys)


def f1_from_the_packages_normalisation(prediction, golds):
    return max(_f1(squad_metrics.normalize_answer(prediction).split(), squad_metrics.normalize_answer(g).split())
               for g in golds)


@pytest.mark.parametrize("check, cheat", [
    (check_race_pack, features.race_pack),
    (check_answer_token_span, features.answer_token_span),
    (check_squad_f1, squad_metrics.f1),
    (check_squad_f1, f1_from_the_packages_normalisation),
], ids=["package-pack", "package-span", "package-f1", "package-normalisation"])
def test_the_packages_own_answer_is_switched_off(check, cheat, capsys):
    fails_with(check, cheat, capsys, "switched off while your function is checked")
    assert squad_metrics.f1("Emma", ["Emma"]) == 1.0 and features.race_pack([5], [6], 8, 2)[0] == [2, 5, 3, 6, 3]


# ------------------------------------------------------------------ hints teach, they do not answer
KEY_EXPRESSIONS = {  # what would hand over each solution, in the forms a hint could spell it
    "race_pack": ["max_length - 3", "[-max_qa_length:]", "- len(qa)", "[0] *", "[1] *"],
    "answer_token_span": ["e > char_start", "s < char_end", "end > char_start", "start < char_end", "[0]", "[-1]"],
    "squad_f1": ["2 * ", "2PR", "/ (p", "Counter(", "& Counter", "re.sub", "string.punctuation"],
}


@pytest.mark.parametrize("exercise", ch08.EXERCISES, ids=lambda e: e.name)
def test_no_hint_spells_out_the_solution(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


def test_later_tries_get_narrower_hints_then_the_solutions_file(capsys):
    def one_off(passage_ids, qa_ids, max_length, max_qa_length):
        ids, types = pack_by_hand(passage_ids, qa_ids, max_length, max_qa_length)
        return ids + [SEP], types + [1]

    gives_the_tiers_in_turn(check_race_pack, one_off, ch08.RACE_PACK, capsys)
