"""Chapter 2's exercise checks: they pass the references, and reject stubs and plausible wrong answers."""

import unicodedata

import pytest

from albert_mini.book.exercises import (
    ExerciseFailed,
    ch02,
    check_albert_preprocess,
    check_pair_layout,
    check_truncate_longest_first,
)
from albert_mini.specials import CLS_ID, SEP_ID
from albert_mini.text.tokenizer import Tokenizer, truncate_pair


def not_written(*args):
    raise NotImplementedError("write your solution here")


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


# ------------------------------------------------------------------ the references agree with independent forms
def test_preprocess_reference_is_the_package_function_and_matches_by_hand():
    for text in ch02.TRICKY_TEXTS:
        assert ch02.preprocess_text(text) == preprocess_by_hand(text)
    assert ch02.preprocess_text("\ufb01ne \u00c9MILE") == "fine emile"


def test_pair_layout_reference_matches_by_hand():
    for a, b in [([10, 11], [12]), ([5], None), ([], [7, 8, 9])]:
        assert ch02.pair_layout(a, b) == layout_by_hand(a, b)


def test_truncation_reference_matches_bert_loop_and_differs_from_hf_only_on_the_odd_token():
    disagreements = 0
    for len_a in range(0, 14):
        for len_b in range(0, 14):
            for total in range(0, 30):
                a, b = list(range(len_a)), list(range(100, 100 + len_b))
                ours = ch02.truncate_longest_first(a, b, total)
                assert ours == bert_truncate_in_place(list(a), list(b), total)
                assert len(ours[0]) + len(ours[1]) == min(total, len_a + len_b)
                hf_a, hf_b = truncate_pair(a, b, total)  # HF's longest_first, what encode_pair uses
                if (len(hf_a), len(hf_b)) != (len(ours[0]), len(ours[1])):
                    disagreements += 1
                    assert abs(len(hf_a) - len(ours[0])) == 1 and len(hf_a) + len(hf_b) == total  # one odd token
    assert disagreements > 0
    assert ch02.truncate_longest_first([1] * 5, [2] * 5, 7) == ([1] * 4, [2] * 3)
    assert truncate_pair([1] * 5, [2] * 5, 7) == ([1] * 3, [2] * 4)


# ------------------------------------------------------------------ the checks accept right answers
def test_checks_pass_on_references_and_independent_answers(capsys):
    assert check_albert_preprocess(ch02.preprocess_text)
    assert check_albert_preprocess(preprocess_by_hand)
    assert check_pair_layout(ch02.pair_layout)
    assert check_pair_layout(layout_by_hand)
    assert check_truncate_longest_first(ch02.truncate_longest_first)
    assert check_truncate_longest_first(bert_truncate_in_place)
    assert "agree with the reference" in capsys.readouterr().out


@pytest.mark.parametrize("check", [check_albert_preprocess, check_pair_layout, check_truncate_longest_first])
def test_checks_report_a_stub(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


# ------------------------------------------------------------------ the checks reject plausible mistakes
def strip_accents_with(form):
    def preprocess(text):
        text = text.replace("``", '"').replace("''", '"')
        text = "".join(c for c in unicodedata.normalize(form, text) if not unicodedata.combining(c))
        return " ".join(text.lower().split())
    return preprocess


@pytest.mark.parametrize("wrong", [
    lambda text: " ".join(text.lower().split()),  # lower-case only
    strip_accents_with("NFD"),  # no compatibility decomposition: the ligature survives
    strip_accents_with("NFKC"),  # composes again, so no combining mark is left to drop
    lambda text: preprocess_by_hand(text.replace("``", "").replace("''", "")),  # drops TeX quotes
    lambda text: " ".join(  # encoding to ASCII loses the pound sign and the Greek
        unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().split()),
    lambda text: "".join(c for c in unicodedata.normalize("NFKD", text.replace("``", '"').replace("''", '"'))
                         if not unicodedata.combining(c)).lower().strip(),  # whitespace runs kept inside
    lambda text: unicodedata.normalize("NFKD", text.replace("``", '"').replace("''", '"')).lower().strip(),
], ids=["lower-only", "nfd", "nfkc", "drops-tex-quotes", "ascii-encode", "strip-only", "keeps-marks-and-spaces"])
def test_preprocess_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_albert_preprocess(wrong)


@pytest.mark.parametrize("wrong", [
    lambda a, b=None: (layout_by_hand(a, b)[0], [0] * len(layout_by_hand(a, b)[0])),  # no token types
    lambda a, b=None: (layout_by_hand(a, b)[0],
                       layout_by_hand(a, b)[1][:-1] + [0] if b is not None else layout_by_hand(a, b)[1]),  # last SEP 0
    lambda a, b=None: ([CLS_ID, *a, SEP_ID, *(b or [])], [0] * (len(a) + 2) + [1] * len(b or [])),  # no final SEP
    lambda a, b=None: ([CLS_ID, *a, SEP_ID] + ([SEP_ID, *b, SEP_ID] if b is not None else []),
                       [0] * (len(a) + 2) + ([1] * (len(b) + 2) if b is not None else [])),  # [SEP] [SEP]
    lambda a, b=None: ([*a, SEP_ID] + ([*b, SEP_ID] if b is not None else []),
                       [0] * (len(a) + 1) + ([1] * (len(b) + 1) if b is not None else [])),  # no [CLS]
], ids=["all-zero-types", "last-sep-type-0", "no-final-sep", "double-sep", "no-cls"])
def test_pair_layout_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_pair_layout(wrong)


def ties_from_a(ids_a, ids_b, max_total):
    while len(ids_a) + len(ids_b) > max_total:
        (ids_a if len(ids_a) >= len(ids_b) else ids_b).pop()
    return ids_a, ids_b


def from_the_front(ids_a, ids_b, max_total):
    while len(ids_a) + len(ids_b) > max_total:
        (ids_a if len(ids_a) > len(ids_b) else ids_b).pop(0)
    return ids_a, ids_b


def only_b(ids_a, ids_b, max_total):
    return ids_a[:max_total], ids_b[:max(0, max_total - len(ids_a))]


def proportional(ids_a, ids_b, max_total):
    total = len(ids_a) + len(ids_b)
    if total <= max_total:
        return ids_a, ids_b
    keep_a = round(len(ids_a) * max_total / total)
    return ids_a[:keep_a], ids_b[:max_total - keep_a]


@pytest.mark.parametrize("wrong", [ties_from_a, from_the_front, only_b, proportional,
                                   lambda a, b, total: truncate_pair(a, b, total)],
                         ids=["ties-from-a", "from-the-front", "only-b", "proportional", "hf-longest-first"])
def test_truncation_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_truncate_longest_first(wrong)


def test_pair_layout_reference_uses_the_committed_tokenizer():
    tokenizer = Tokenizer.default()
    ids = tokenizer.encode("It is a truth universally acknowledged.")
    assert ch02.pair_layout(ids, ids)[0] == tokenizer.encode_pair(ids, ids)["input_ids"]
