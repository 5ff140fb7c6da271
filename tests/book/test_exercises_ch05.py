"""Chapter 5's exercise checks: they pass the references and the solutions, reject stubs, plausible wrong answers
and cheats with a hint of their own, and the chapter keeps the package's overlap out of reach until Exercise 3."""

import dataclasses
import runpy
from pathlib import Path

import numpy as np
import pytest
from exercise_helpers import (
    GRADER_SEED,
    AlwaysEqual,
    SneakyFloat,
    SneakyInt,
    draws_unseen_cases,
    fails_with,
    gives_nothing_away,
    gives_the_tiers_in_turn,
    names_the_mistake,
    refuses_the_package_answer,
    reports_a_stub,
)

from albert_mini.book.exercises import ch05, check_nsp_label_from_sources, check_overlap_feature, check_sop_pair
from albert_mini.book.exercises.checking import Case
from albert_mini.study.leak_probe import type_overlap
from albert_mini.text.instances import build_instances

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "chapters" / "05_sentence_order_prediction.py"
SOLUTIONS = ROOT / "chapters" / "solutions" / "05_sentence_order_prediction.py"
pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


def toy_documents(seed=0, n_docs=6):
    """Documents of 4-12 sentences, each sentence 2-9 random ids, so instances have varied sources."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(5, 200, size=int(rng.integers(2, 10))).tolist() for _ in range(int(rng.integers(4, 13)))]
            for _ in range(n_docs)]


# ------------------------------------------------------------------ the references agree with the instance builder
def test_sop_reference_rebuilds_every_sop_instance():
    """Undo each instance's swap from its sources, then sop_pair must rebuild exactly its A, B and label."""
    docs = toy_documents()
    streams = [np.concatenate([np.asarray(s) for s in doc]) for doc in docs]
    instances = build_instances(docs, "sop", max_seq_len=32, seed=3)
    assert {inst.label for inst in instances} == {0, 1}
    for inst in instances:
        (doc, a0, a1), (_, b0, b1) = inst.source_a, inst.source_b
        swapped = b1 == a0  # B ends where A starts: B is the earlier text
        earlier, later = (streams[doc][b0:b1], streams[doc][a0:a1]) if swapped else \
            (streams[doc][a0:a1], streams[doc][b0:b1])
        first, second, label = ch05.sop_pair(earlier.tolist(), later.tolist(), swapped)
        assert label == inst.label and type(label) is int
        assert first == inst.tokens[1:1 + inst.len_a].tolist()
        assert second == inst.tokens[2 + inst.len_a:-1].tolist()


def test_nsp_reference_recovers_every_nsp_label():
    instances = build_instances(toy_documents(1), "nsp", max_seq_len=32, seed=4)
    assert {inst.label for inst in instances} == {0, 1}
    assert all(ch05.nsp_label_from_sources(i.source_a, i.source_b) == i.label for i in instances)


def test_overlap_reference_is_the_librarys_and_right_on_hand_computed_cases():
    assert ch05.overlap_feature([5, 6, 7], [6, 7, 8, 9]) == type_overlap([5, 6, 7], [6, 7, 8, 9]) == 0.5
    assert type_overlap([5, 6, 7], [5, 5, 5, 9]) == 0.5  # types, not occurrences
    assert type_overlap([5, 11], [5, 6, 7, 8, 9, 10]) == pytest.approx(1 / 6)
    assert type_overlap([1], []) == 0.0
    assert type_overlap(np.asarray([5, 6], dtype=np.int32), np.asarray([6, 6, 8])) == 0.5


# ------------------------------------------------------------------ right answers pass, here and under the grader
def pair_with_lists(a, b, swap):
    pair = [list(a), list(b)]
    return (pair[1], pair[0], 1) if swap else (pair[0], pair[1], 0)


def label_by_comparison(source_a, source_b):
    return int(not (source_a[0] == source_b[0] and source_a[2] == source_b[1]))


def overlap_with_numpy(a, b):
    b_types = np.unique(np.asarray(b, dtype=np.int64))
    return float(np.isin(b_types, np.asarray(a)).mean()) if len(b_types) else 0.0


def test_checks_pass_the_references_solutions_and_independent_answers(capsys):
    solutions = runpy.run_path(str(SOLUTIONS))
    assert check_sop_pair(ch05.sop_pair) and check_sop_pair(solutions["sop_pair"])
    assert check_nsp_label_from_sources(ch05.nsp_label_from_sources)
    assert check_nsp_label_from_sources(solutions["nsp_label_from_sources"])
    assert check_overlap_feature(solutions["overlap_feature"])
    assert check_sop_pair(pair_with_lists) and check_nsp_label_from_sources(label_by_comparison)
    assert check_overlap_feature(overlap_with_numpy)
    assert check_overlap_feature(lambda a, b: np.float64(overlap_with_numpy(a, b)))  # any plain number
    assert check_sop_pair(lambda a, b, swap: [*pair_with_lists(a, b, swap)])  # a list of three
    assert "Not yet" not in capsys.readouterr().out
    for exercise, answer in [(ch05.SOP_PAIR, pair_with_lists), (ch05.NSP_LABEL, label_by_comparison),
                             (ch05.OVERLAP, solutions["overlap_feature"])]:
        assert exercise.verdict(answer, GRADER_SEED).passed is True


def test_the_grader_draws_cases_the_learner_never_saw():
    draws_unseen_cases(ch05.EXERCISES, shown=repr)
    table = {repr(c.args): ch05.nsp_label_from_sources(*c.args) for c in ch05.NSP_LABEL.cases()}
    lookup = lambda a, b: table.get(repr((a, b)), 1)  # noqa: E731 (a table of the learner's cases)
    assert check_nsp_label_from_sources(lookup) is True
    assert ch05.NSP_LABEL.verdict(lookup, GRADER_SEED).passed is False


@pytest.mark.parametrize("check", [check_sop_pair, check_nsp_label_from_sources, check_overlap_feature])
def test_checks_report_the_stub(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ wrong answers: each common one with its hint
@pytest.mark.parametrize("wrong, hint", [
    (lambda a, b, swap: (list(b), list(a), 0) if swap else (list(a), list(b), 1), "the order is right but the label"),
    (lambda a, b, swap: (list(a), list(b), int(swap)), "the label says \"swapped\" but the segments"),
    (lambda a, b, swap: (list(a), list(b), 1) if swap else (list(b), list(a), 0), "you swap the segments when swap"),
    (lambda a, b, swap: (list(a) + list(b), [], int(swap)), ch05.SOP_PAIR.hints[0]),
], ids=["flipped-label", "ignores-swap", "swaps-when-false", "unrecognised"])
def test_sop_names_the_mistake(wrong, hint, capsys):
    names_the_mistake(check_sop_pair, wrong, hint, capsys)
    assert ch05.SOP_PAIR.verdict(wrong, GRADER_SEED).passed is False


@pytest.mark.parametrize("label, message", [
    (lambda swap: bool(swap), "the label is the bool False; the text asks for the int 0 or 1"),
    (lambda swap: np.int64(swap), "the label is a numpy.int64"),
    (lambda swap: float(swap), "the label is a float"),
], ids=["bool", "numpy-int", "float"])
def test_sop_label_must_be_a_python_int(label, message, capsys):
    fails_with(check_sop_pair, lambda a, b, swap: (*pair_with_lists(a, b, swap)[:2], label(swap)), capsys, message)


@pytest.mark.parametrize("wrong, hint", [
    (lambda a, b: int(a[0] != b[0]), "the same document is not enough"),
    (lambda a, b: 1 - ch05.nsp_label_from_sources(a, b), "this B is A's true continuation, label 0"),
    (lambda a, b: int(not (b[1] == a[2])), "another document can have the same offsets"),
    (lambda a, b: int(not (a[0] == b[0] and (b[1] == a[2] or b[2] == a[1]))), "B must come after A"),
    (lambda a, b: int(not (a[0] == b[0] and b[1] == a[2] + 1)), "this B is A's true continuation, label 0"),
], ids=["document-only", "flipped", "offsets-only", "either-order", "end-inclusive"])
def test_nsp_names_the_mistake(wrong, hint, capsys):
    names_the_mistake(check_nsp_label_from_sources, wrong, hint, capsys)
    assert ch05.NSP_LABEL.verdict(wrong, GRADER_SEED).passed is False


def test_an_inclusive_end_gets_its_own_hint_where_a_token_is_skipped(capsys):
    one_later = dataclasses.replace(ch05.NSP_LABEL, fixed=[Case(((3, 0, 40), (3, 41, 90)))], drawn=None)
    names_the_mistake(one_later.check, lambda a, b: int(not (a[0] == b[0] and b[1] == a[2] + 1)),
                      "the end token is exclusive", capsys)


def test_an_answer_no_mistake_explains_gets_the_tiers_in_turn(capsys):
    plain = dataclasses.replace(ch05.NSP_LABEL, mistakes=())
    gives_the_tiers_in_turn(plain.check, lambda a, b: 0, ch05.NSP_LABEL, capsys)


def test_nsp_label_must_be_a_python_int(capsys):
    fails_with(check_nsp_label_from_sources, lambda a, b: not (a[0] == b[0] and b[1] == a[2]), capsys,
               "the label is the bool False; the text asks for the int 0 or 1")


def occurrences(a, b):
    return sum(int(t) in set(_ids(a)) for t in b) / len(b) if len(b) else 0.0


def _ids(tokens):
    return [int(t) for t in tokens]


@pytest.mark.parametrize("wrong, hint", [
    (occurrences, "count B's distinct tokens"),
    (lambda a, b: len(set(_ids(a)) & set(_ids(b))) / len(set(_ids(a))) if len(b) else 0.0, "divide by the number"),
    (lambda a, b: len(set(_ids(a)) & set(_ids(b))) / len(set(_ids(a)) | set(_ids(b))) if len(b) else 0.0,
     "that is the Jaccard index"),
    (lambda a, b: 1 - type_overlap(a, b) if len(b) else 0.0, "that is the fraction of B's types missing"),
    (lambda a, b: len(set(_ids(a)) & set(_ids(b))), "that is a count of shared types"),
    (lambda a, b: overlap_with_numpy(a, b) if len(b) else float("nan"), "for an empty B the feature is 0.0"),
    (lambda a, b: overlap_with_numpy(a, b) / 2, ch05.OVERLAP.hints[0]),
], ids=["occurrences", "over-a", "jaccard", "missing", "count", "empty-b-nan", "unrecognised"])
def test_overlap_names_the_mistake(wrong, hint, capsys):
    check = dataclasses.replace(ch05.OVERLAP, unavailable=())  # some wrong answers reuse the library's overlap
    names_the_mistake(check.check, wrong, hint, capsys)


def test_overlap_reports_a_division_by_zero_on_the_empty_b(capsys):
    fails_with(check_overlap_feature, lambda a, b: len(set(_ids(a)) & set(_ids(b))) / len(set(_ids(b))), capsys,
               "raised ZeroDivisionError", "(an empty B)")


def test_changing_the_segments_in_place_is_named(capsys):
    def sorts_b(a, b):
        b.sort()
        return overlap_with_numpy(a, b)

    fails_with(check_overlap_feature, sorts_b, capsys, "changed input 2 in place")


# ------------------------------------------------------------------ cheats fail
@pytest.mark.parametrize("check, cheat, message", [
    (check_sop_pair, lambda a, b, swap: AlwaysEqual(), "not plain data"),
    (check_sop_pair, lambda a, b, swap: (list(a), list(b), SneakyInt(0)), "not plain data"),
    (check_nsp_label_from_sources, lambda a, b: AlwaysEqual(), "not plain data"),
    (check_nsp_label_from_sources, lambda a, b: SneakyInt(0), "not plain data"),
    (check_overlap_feature, lambda a, b: AlwaysEqual(), "not plain data"),
    (check_overlap_feature, lambda a, b: SneakyFloat(0.5), "not plain data"),
], ids=["always-equal-pair", "int-subclass-label", "always-equal-label", "int-subclass", "always-equal-overlap",
        "float-subclass"])
def test_cheats_fail(check, cheat, message, capsys):
    fails_with(check, cheat, capsys, message)


def test_the_librarys_overlap_is_not_available_while_checking(capsys):
    for answer in (type_overlap, ch05.overlap_feature, lambda a, b: type_overlap(a, b)):
        refuses_the_package_answer(ch05.OVERLAP, answer, capsys, check=check_overlap_feature)
    assert type_overlap([5], [5]) == 1.0  # and it works again afterwards


# ------------------------------------------------------------------ hints point at the idea, not at the answer
KEY_EXPRESSIONS = {
    "sop_pair": ["(b,a,1)", "(a,b,0)", "ifswap", "list(segment_b)"],
    "nsp_label_from_sources": ["source_a[0]==source_b[0]", "source_b[1]==source_a[2]", "a[2]==b[1]", "b[1]==a[2]"],
    "overlap_feature": ["set(", "len(types_b", "np.unique", "np.isin", "/len("],
}


@pytest.mark.parametrize("exercise", ch05.EXERCISES, ids=lambda e: e.name)
def test_no_hint_gives_the_answer_away(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


# ------------------------------------------------------------------ the chapter keeps the answer out of reach
def test_the_chapter_uses_the_librarys_overlap_only_after_exercise_3():
    import jupytext

    cells = jupytext.read(CHAPTER).cells
    stub = next(i for i, c in enumerate(cells) if "def overlap_feature(" in c.source)
    before = "\n".join(c.source for c in cells[:stub] if c.cell_type == "code")
    assert "type_overlap" not in before and "np.isin" not in before
    assert any("from albert_mini.study.leak_probe import type_overlap" in c.source for c in cells[stub:])
    assert not [c for c in cells if "albert_mini.book.exercises.ch" in c.source]  # no reference imported
    assert not hasattr(ch05, "__all__")
