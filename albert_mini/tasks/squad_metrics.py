"""SQuAD v1.1 scores: exact match and token-level F1 after the official evaluation's answer normalisation.

Both compare a predicted answer with every gold answer of the question and keep the best match. The rules
follow the v1.1 evaluation script: only ASCII punctuation (`string.punctuation`) is removed, and a prediction
or gold answer that normalises to nothing has F1 0 (while two empty strings still match exactly).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from .formats import SpanExample

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["exact_match", "f1", "normalize_answer", "squad_scores"]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower-case, drop ASCII punctuation, drop the articles a/an/the, collapse whitespace."""
    text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)  # after punctuation, so "the," and "(the" lose their article too
    return " ".join(text.split())


def _golds(golds: str | Iterable[str]) -> list[str]:
    golds = [golds] if isinstance(golds, str) else list(golds)
    if not golds:
        raise ValueError("no gold answers to compare with; pass at least one")
    return golds


def exact_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0."""
    predicted = normalize_answer(prediction)
    return float(any(predicted == normalize_answer(g) for g in _golds(golds)))


def _f1_one(prediction_tokens: list[str], gold_tokens: list[str]) -> float:
    shared = sum((Counter(prediction_tokens) & Counter(gold_tokens)).values())  # tokens counted with multiplicity
    if shared == 0:
        return 0.0
    precision, recall = shared / len(prediction_tokens), shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, golds: str | Iterable[str]) -> float:
    """Best token-level F1 (bag of normalised words) between the prediction and any gold answer, in [0, 1]."""
    predicted = normalize_answer(prediction).split()
    return max(_f1_one(predicted, normalize_answer(g).split()) for g in _golds(golds))


def squad_scores(predictions: Mapping[str, str], examples: Sequence[SpanExample]) -> dict[str, float | int]:
    """{"exact_match": %, "f1": %, "n": number of examples} over `examples`, each scored against all its answers.

    Every example needs a prediction (predictions for other ids are ignored) and at least one answer.
    """
    if not examples:
        raise ValueError("no examples to score")
    missing = [e.id for e in examples if e.id not in predictions]
    if missing:
        raise KeyError(f"{len(missing)} example(s) have no prediction, e.g. {missing[:3]}; predict every example "
                       f"(decode_spans gives \"\" when it finds no span) or score only the ones you predicted")
    unanswered = [e.id for e in examples if not e.answers]
    if unanswered:
        raise ValueError(f"{len(unanswered)} example(s) have no gold answer, e.g. {unanswered[:3]}; SQuAD v1 scores "
                         f"need at least one answer per question")
    em_total = f1_total = 0.0
    for example in examples:
        golds = [a.text for a in example.answers]
        em_total += exact_match(predictions[example.id], golds)
        f1_total += f1(predictions[example.id], golds)
    n = len(examples)
    return {"exact_match": 100.0 * em_total / n, "f1": 100.0 * f1_total / n, "n": n}
