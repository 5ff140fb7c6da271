"""Chapter 2's exercise checks: they pass the references and the solutions, reject stubs, plausible wrong answers
and cheats with a hint of their own, and neither the chapter nor a hint gives an answer away."""

import dataclasses
import runpy
import unicodedata
from pathlib import Path

import pytest
from exercise_helpers import (
    GRADER_SEED,
    AlwaysEqual,
    SneakyInt,
    SneakyStr,
    draws_unseen_cases,
    fails_with,
    gives_nothing_away,
    names_the_mistake,
    refuses_the_package_answer,
    reports_a_stub,
)

from albert_mini.book.exercises import ch02, check_albert_preprocess, check_pair_layout, check_truncate_longest_first
from albert_mini.book.exercises.checking import Case
from albert_mini.specials import CLS_ID, SEP_ID
from albert_mini.text.tokenizer import Tokenizer, preprocess_text, truncate_longest_first, truncate_pair

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "chapters" / "02_tokenization.py"
SOLUTIONS = ROOT / "chapters" / "solutions" / "02_tokenization.py"
pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    return runpy.run_path(str(SOLUTIONS))


# ------------------------------------------------------------------ learner-style answers written independently
def preprocess_by_hand(text):
    text = text.replace("``", '"').replace("''", '"')
    decomposed = unicodedata.normalize("NFKD", text)
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).lower().split())


def layout_by_hand(ids_a, ids_b=None):
    input_ids = [CLS_ID, *ids_a, SEP_ID]
    types = [0] * len(input_ids)
    if ids_b is not None:
        input_ids += [*ids_b, SEP_ID]
        types += [1] * (len(ids_b) + 1)
    return input_ids, types


def bert_truncate_in_place(ids_a, ids_b, max_total):
    """BERT's run_classifier._truncate_seq_pair, as a learner would transcribe it (pops in place)."""
    while len(ids_a) + len(ids_b) > max_total:
        (ids_a if len(ids_a) > len(ids_b) else ids_b).pop()
    return ids_a, ids_b


def truncate_on_copies(ids_a, ids_b, max_total):
    return bert_truncate_in_place(list(ids_a), list(ids_b), max_total)


# ------------------------------------------------------------------ the references agree with independent forms
def test_preprocess_reference_is_the_package_function_and_matches_by_hand():
    for text in ch02.TRICKY_TEXTS:
        assert ch02.albert_preprocess(text) == preprocess_text(text) == preprocess_by_hand(text)
    assert preprocess_text("\ufb01ne \u00c9MILE") == "fine emile"


def test_pair_layout_reference_matches_by_hand_and_the_committed_tokenizer():
    for a, b in [([10, 11], [12]), ([5], None), ([], [7, 8, 9]), ([4], [])]:
        assert ch02.pair_layout(a, b) == layout_by_hand(a, b)
    tokenizer = Tokenizer.default()
    ids = tokenizer.encode("It is a truth universally acknowledged.")
    assert ch02.pair_layout(ids, ids)[0] == tokenizer.encode_pair(ids, ids)["input_ids"]


def test_truncation_reference_matches_bert_loop_and_differs_from_hf_only_on_the_odd_token():
    disagreements = 0
    for len_a in range(0, 14):
        for len_b in range(0, 14):
            for total in range(0, 30):
                a, b = list(range(len_a)), list(range(100, 100 + len_b))
                ours = truncate_longest_first(a, b, total)
                assert (a, b) == (list(range(len_a)), list(range(100, 100 + len_b)))  # inputs left as they were
                assert ours == bert_truncate_in_place(list(a), list(b), total)
                assert len(ours[0]) + len(ours[1]) == min(total, len_a + len_b)
                hf_a, hf_b = truncate_pair(a, b, total)  # HF's longest_first, what encode_pair uses
                if (len(hf_a), len(hf_b)) != (len(ours[0]), len(ours[1])):
                    disagreements += 1
                    assert abs(len(hf_a) - len(ours[0])) == 1 and len(hf_a) + len(hf_b) == total  # one odd token
    assert disagreements > 0
    assert truncate_longest_first([1] * 5, [2] * 5, 7) == ([1] * 4, [2] * 3)
    assert truncate_pair([1] * 5, [2] * 5, 7) == ([1] * 3, [2] * 4)


# ------------------------------------------------------------------ right answers pass, here and under the grader
def test_checks_pass_on_the_solutions_and_independent_answers(solutions, capsys):
    for check, name, independent in [(check_albert_preprocess, "albert_preprocess", preprocess_by_hand),
                                     (check_pair_layout, "pair_layout", layout_by_hand),
                                     (check_truncate_longest_first, "truncate_longest_first", truncate_on_copies)]:
        assert check(solutions[name]) is True
        assert check(independent) is True
    assert check_pair_layout(lambda a, b=None: tuple(layout_by_hand(a, b)))  # a list of two is as good
    assert capsys.readouterr().out.count("Well done!") == 7
    for exercise in ch02.EXERCISES:
        assert exercise.verdict(solutions[exercise.name], GRADER_SEED).passed is True


def test_the_references_pass_where_they_call_no_package_answer():
    assert check_pair_layout(layout_by_hand)
    assert ch02.PAIR_LAYOUT.verdict(layout_by_hand, GRADER_SEED).passed is True


def test_the_grader_draws_cases_the_learner_never_saw():
    draws_unseen_cases(ch02.EXERCISES)


def test_a_table_of_the_learners_cases_fails_under_the_grader():
    table = {(tuple(c.args[0]), tuple(c.args[1]), c.args[2]): truncate_longest_first(*c.args)
             for c in ch02.TRUNCATE.cases()}
    lookup = lambda a, b, total: table.get((tuple(a), tuple(b), total), ([], []))  # noqa: E731
    assert check_truncate_longest_first(lookup) is True
    assert ch02.TRUNCATE.verdict(lookup, GRADER_SEED).passed is False


@pytest.mark.parametrize("check", [check_albert_preprocess, check_pair_layout, check_truncate_longest_first])
def test_checks_report_a_stub(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ wrong answers: each common one with its hint
def preprocess_variant(step):
    return ch02._without(step)


@pytest.mark.parametrize("wrong, hint", [
    (preprocess_variant("nfd"), "ligatures and fractions survive"),
    (preprocess_variant("nfkc"), "a composed form puts each accent back"),
    (preprocess_variant("nfc"), "a composed form puts each accent back"),
    (preprocess_variant("keeps-marks"), "the accents are still there"),
    (preprocess_variant("ascii"), "encoding to ASCII also throws away"),
    (preprocess_variant("keeps-case"), "the text still has capitals"),
    (preprocess_variant("keeps-tex-quotes"), "the TeX-style quotes `` and '' should each become"),
    (preprocess_variant("drops-tex-quotes"), "the TeX-style quotes are replaced by a double quote, not removed"),
    (preprocess_variant("strip-only"), "whitespace inside the text counts too"),
    (preprocess_variant("split-on-spaces"), "whitespace inside the text counts too"),
    (lambda text: preprocess_by_hand(text).upper(), ch02.PREPROCESS.hints[0]),
], ids=["nfd", "nfkc", "nfc", "keeps-marks", "ascii", "keeps-case", "keeps-tex-quotes", "drops-tex-quotes",
        "strip-only", "split-on-spaces", "unrecognised"])
def test_preprocess_check_names_the_mistake(wrong, hint, capsys):
    names_the_mistake(check_albert_preprocess, wrong, hint, capsys)
    assert ch02.PREPROCESS.verdict(wrong, GRADER_SEED).passed is False


def no_final_sep(a, b=None):
    return [CLS_ID, *a, SEP_ID, *(b or [])], [0] * (len(a) + 2) + [1] * len(b or [])


def if_b(a, b=None):  # `if ids_b:` treats an empty B like None
    return layout_by_hand(a, b if b else None)


@pytest.mark.parametrize("wrong, hint", [
    (lambda a, b=None: (layout_by_hand(a, b)[0], [0] * len(layout_by_hand(a, b)[0])), "every token type is 0"),
    (lambda a, b=None: (layout_by_hand(a, b)[0], layout_by_hand(a, b)[1][:-1] + [0] if b is not None
                        else layout_by_hand(a, b)[1]), "the final [SEP] belongs to B"),
    (lambda a, b=None: (layout_by_hand(a, b)[0], [0] * (len(a) + 1) + [1] * (len(b) + 2) if b is not None
                        else layout_by_hand(a, b)[1]), "the first [SEP] closes A"),
    (no_final_sep, "B is closed by a [SEP] of its own too"),
    (lambda a, b=None: ([*a, SEP_ID] + ([*b, SEP_ID] if b is not None else []),
                        [0] * (len(a) + 1) + ([1] * (len(b) + 1) if b is not None else [])),
     "every input starts with [CLS]"),
    (lambda a, b=None: layout_by_hand(a, [] if b is None else b), "with ids_b=None there is no second segment"),
    (if_b, "an empty second segment ([]) is still a segment"),
    (lambda a, b=None: (layout_by_hand(a, b)[0][::-1], layout_by_hand(a, b)[1]), ch02.PAIR_LAYOUT.hints[0]),
], ids=["all-zero-types", "last-sep-type-0", "first-sep-type-1", "no-final-sep", "no-cls", "none-as-empty",
        "empty-as-none", "unrecognised"])
def test_pair_layout_check_names_the_mistake(wrong, hint, capsys):
    names_the_mistake(check_pair_layout, wrong, hint, capsys)


def test_pair_layout_calls_the_default_for_a_single_segment(capsys):
    no_default = lambda a, b: layout_by_hand(a, b)  # noqa: E731 (no default for ids_b)
    fails_with(check_pair_layout, no_default, capsys, "raised TypeError")


def test_pair_layout_rejects_changing_the_given_lists(capsys):
    def in_place(a, b=None):
        a.insert(0, CLS_ID)
        a.append(SEP_ID)
        return layout_by_hand(a[1:-1], b)

    fails_with(check_pair_layout, in_place, capsys, "changed input 1 in place")


def ties_from_a(ids_a, ids_b, max_total):
    return ch02._ties_from_a(ids_a, ids_b, max_total)


def only_b(ids_a, ids_b, max_total):
    return list(ids_a[:max_total]), list(ids_b[:max(0, max_total - len(ids_a))])


def proportional(ids_a, ids_b, max_total):
    total = len(ids_a) + len(ids_b)
    if total <= max_total:
        return list(ids_a), list(ids_b)
    keep_a = round(len(ids_a) * max_total / total)
    return list(ids_a[:keep_a]), list(ids_b[:max_total - keep_a])


def one_too_many(ids_a, ids_b, max_total):
    return truncate_on_copies(ids_a, ids_b, max_total - 1 if len(ids_a) + len(ids_b) >= max_total else max_total)


def one_too_few(ids_a, ids_b, max_total):
    return truncate_on_copies(ids_a, ids_b, max_total + 1)


@pytest.mark.parametrize("wrong, hint", [
    (ties_from_a, "on a tie the token comes off B, not A"),
    (ch02._from_the_front, "tokens come off the end of a segment, not its start"),
    (ch02._cut_once, "you chose the longer segment once"),
    (one_too_many, "one token too many was removed"),
    (one_too_few, "one token too few was removed"),
    (only_b, "you chose the longer segment once"),  # the same answer where the first case fails
    (proportional, "on a tie the token comes off B"),  # the same answer where the first case fails
    (lambda a, b, total: truncate_on_copies(a, b, total)[::-1], ch02.TRUNCATE.hints[0]),
], ids=["ties-from-a", "from-the-front", "cut-once", "one-too-many", "one-too-few", "only-b", "proportional",
        "unrecognised"])
def test_truncation_check_names_the_mistake(wrong, hint, capsys):
    names_the_mistake(check_truncate_longest_first, wrong, hint, capsys)
    assert ch02.TRUNCATE.verdict(wrong, GRADER_SEED).passed is False


def test_hugging_faces_rule_fails_where_b_keeps_the_odd_token(capsys):
    """HF's longest_first differs from ALBERT's loop only where B started longer and both are cut to an odd
    total: there it gives B the odd token, as a loop that takes ties from A does, and gets that hint."""
    odd = dataclasses.replace(ch02.TRUNCATE, fixed=[Case((list(range(6)), list(range(9)), 7))], drawn=None)
    names_the_mistake(odd.check, truncate_pair, "on a tie the token comes off B", capsys)
    assert check_truncate_longest_first(truncate_pair) is False


def test_truncation_rejects_cutting_the_given_lists(capsys):
    fails_with(check_truncate_longest_first, bert_truncate_in_place, capsys, "changed input 1, input 2 in place")


# ------------------------------------------------------------------ cheats fail
@pytest.mark.parametrize("check, cheat, message", [
    (check_albert_preprocess, lambda text: AlwaysEqual(), "not plain data"),
    (check_albert_preprocess, lambda text: SneakyStr(text), "not plain data"),
    (check_pair_layout, lambda a, b=None: AlwaysEqual(), "not plain data"),
    (check_pair_layout, lambda a, b=None: ([SneakyInt(0)], [SneakyInt(0)]), "not plain data"),
    (check_pair_layout, lambda a, b=None: layout_by_hand(a, b)[0], "return two lists"),
    (check_truncate_longest_first, lambda a, b, total: (AlwaysEqual(), AlwaysEqual()), "not plain data"),
    (check_truncate_longest_first, lambda a, b, total: ([SneakyInt(1)] * 3, []), "not plain data"),
], ids=["always-equal-text", "str-subclass", "always-equal-pair", "int-subclass-ids", "one-list",
        "always-equal-lists", "int-subclass-truncation"])
def test_cheats_fail(check, cheat, message, capsys):
    fails_with(check, cheat, capsys, message)


@pytest.mark.parametrize("exercise, package_answer", [
    (ch02.PREPROCESS, lambda text: preprocess_text(text)),
    (ch02.PREPROCESS, lambda text: Tokenizer.default().decode(Tokenizer.default().encode(text))),
    (ch02.PAIR_LAYOUT, lambda a, b=None: (Tokenizer.default().encode_pair(a, b)["input_ids"],
                                          Tokenizer.default().encode_pair(a, b)["token_type_ids"])),
    (ch02.PAIR_LAYOUT, lambda a, b=None: ch02.pair_layout(a, b)),  # the reference calls encode_pair
    (ch02.TRUNCATE, lambda a, b, total: truncate_longest_first(a, b, total)),
], ids=["preprocess_text", "encode-decode", "encode_pair", "reference-pair-layout", "truncate_longest_first"])
def test_the_package_answer_is_not_available_while_checking(exercise, package_answer, capsys):
    refuses_the_package_answer(exercise, package_answer, capsys)
    assert exercise.check(exercise.reference) is not True  # the reference is the package's own function
    assert preprocess_text("Caf\u00e9") == "cafe"  # and the package works again afterwards


# ------------------------------------------------------------------ hints point at the idea, not at the answer
KEY_EXPRESSIONS = {
    "albert_preprocess": ["normalize(", "NFKD", "combining(", ".lower()", ".split()", "join("],
    "pair_layout": ["[CLS_ID", "[2]+", "[0]*", "[1]*", "len(ids_b)+1"],
    "truncate_longest_first": ["whilelen(", ".pop()", "len(a)+len(b)>", ">=len(", "ifa>b"],
}


@pytest.mark.parametrize("exercise", ch02.EXERCISES, ids=lambda e: e.name)
def test_no_hint_gives_the_answer_away(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


def test_every_mistake_hint_is_its_own():
    for exercise in ch02.EXERCISES:
        hints = [m.hint for m in exercise.mistakes]
        assert len(hints) == len(set(hints)), exercise.name
        assert not set(hints) & set(exercise.hints)


# ------------------------------------------------------------------ the chapter keeps the answers out of reach
def test_before_each_exercise_the_chapter_neither_uses_nor_names_the_package_answer():
    import jupytext

    cells = jupytext.read(CHAPTER).cells
    for exercise in ch02.EXERCISES:
        stub = next(i for i, c in enumerate(cells) if f"def {exercise.name}(" in c.source)
        code = "\n".join(c.source for c in cells[:stub] if c.cell_type == "code")
        prose = "\n".join(c.source for c in cells[:stub] if c.cell_type == "markdown")
        for target in exercise.unavailable:
            name = target.rpartition(".")[2].rpartition(":")[2]
            assert name not in code, f"{exercise.name}: `{name}` is used before the exercise"
            assert name == exercise.name or name not in prose, f"{exercise.name}: `{name}` is named before it"
    assert not [c for c in cells if "albert_mini.book.exercises.ch" in c.source]  # no reference imported


def test_the_package_rule_lives_in_the_library():
    from albert_mini.text import tokenizer

    assert "truncate_longest_first" in tokenizer.__all__
    assert not hasattr(ch02, "__all__")  # the exercises module exports nothing to the chapters


def test_right_ids_with_wrong_types_get_no_hint_about_ids(capsys):
    """ids right and types wrong in a way no mistake names: the hint is a tier, never one about the ids (such as
    "with ids_b=None ..." when ids_b was given)."""
    def types_shifted(a, b=None):
        ids, types = layout_by_hand(a, b)
        return ids, [1 - t for t in types]

    printed = fails_with(check_pair_layout, types_shifted, capsys, "hint:")
    assert "ids_b=None" not in printed and "[CLS]" not in printed.split("hint:")[1]
