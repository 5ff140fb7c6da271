"""SQuAD v1.1 exact match and F1, checked against values computed by hand."""

import pytest

from albert_mini.tasks.formats import Answer, SpanExample
from albert_mini.tasks.squad_metrics import exact_match, f1, normalize_answer, squad_scores


def test_normalize_answer():
    assert normalize_answer("The  Bennet's, family!") == "bennets family"
    assert normalize_answer("An Elephant") == "elephant"
    assert normalize_answer("theatre and a thesis") == "theatre and thesis"  # only whole-word articles go
    assert normalize_answer("(the) Netherfield\tball") == "netherfield ball"  # punctuation first, then "the"
    assert normalize_answer("\u201cPemberley\u201d") == "\u201cpemberley\u201d"  # v1.1 strips ASCII punctuation only
    assert normalize_answer("") == ""


def test_exact_match():
    assert exact_match("An Elephant!", "elephant") == 1.0
    assert exact_match("Mr. Darcy", ["Mr Bingley", "mr darcy"]) == 1.0
    assert exact_match("Darcy", ["Mr. Darcy"]) == 0.0
    assert exact_match("the", "a") == 1.0  # both normalise to ""


def test_f1_by_hand():
    # "the Bennet family" -> [bennet, family]; "Bennets family" -> [bennets, family]; shared: family.
    # precision 1/2, recall 1/2, F1 = 2 * 1/4 / 1 = 0.5.
    assert f1("the Bennet family", "Bennets family") == pytest.approx(0.5)
    # pred -> [mr, darcys, estate, pemberley].
    # vs [pemberley]: shared 1, P = 1/4, R = 1, F1 = 2 * (1/4) / (5/4) = 0.4.
    # vs [darcys, estate, at, pemberley]: shared 3, P = R = 3/4, F1 = 0.75. The best gold counts.
    assert f1("Mr. Darcy's estate, Pemberley", "Pemberley") == pytest.approx(0.4)
    assert f1("Mr. Darcy's estate, Pemberley", ["Pemberley", "Darcy's estate at Pemberley"]) == pytest.approx(0.75)
    # Repeated words count with multiplicity: [cat, cat, cat] vs [cat]: shared 1, P = 1/3, R = 1, F1 = 0.5.
    assert f1("the cat cat cat", "cat") == pytest.approx(0.5)
    assert f1("Jane", "Elizabeth") == 0.0
    assert f1("the", "a") == 0.0  # v1.1: nothing left to share gives F1 0 even though EM is 1
    with pytest.raises(ValueError, match="no gold"):
        f1("x", [])


def test_squad_scores_by_hand():
    examples = [
        SpanExample("q1", "Who?", "An Elephant.", [Answer("Elephant", 3)]),
        SpanExample("q2", "Who?", "Bennets family", [Answer("Bennets family", 0)]),
        SpanExample("q3", "Where?", "Darcy's estate at Pemberley", [Answer("Pemberley", 18),
                                                                   Answer("Darcy's estate at Pemberley", 0)]),
    ]
    predictions = {"q1": "an elephant", "q2": "the Bennet family", "q3": "Mr. Darcy's estate, Pemberley",
                   "other": "ignored"}
    scores = squad_scores(predictions, examples)
    # EM: 1, 0, 0 -> 33.33%; F1: 1, 0.5, 0.75 -> 75%.
    assert scores == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(75.0), "n": 3}
    with pytest.raises(KeyError, match="q2"):
        squad_scores({"q1": "x", "q3": "y"}, examples)
    with pytest.raises(ValueError, match="no gold answer.*q4"):
        squad_scores({"q4": "x"}, [SpanExample("q4", "Who?", "Jane", [])])
