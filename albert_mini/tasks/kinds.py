"""Fine-tuning task kinds: per head, how examples become features and batches, what counts as a hit, the score.

A kind is one of the three heads of albert_mini.model.heads with everything that depends on it. A task
(albert_mini.tasks.registry) is data of one kind: its examples and its lengths. Adding a kind means writing its
functions and one TASK_KINDS entry; the fine-tuning loop asks the kind and never compares names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..errors import lookup
from ..model.config import AlbertConfig
from ..model.heads import AlbertForMultipleChoice, AlbertForQuestionAnswering, AlbertForSequenceClassification
from .features import (
    classification_features,
    collate_classification,
    collate_multiple_choice,
    collate_spans,
    decode_spans,
    race_features,
    squad_features,
)
from .squad_metrics import squad_scores


@dataclass(frozen=True)
class TaskKind:
    """Everything about fine-tuning that depends on the head.

    new_head(config, num_labels): a freshly initialised head model.
    targets: batch keys the loss needs.
    features(tokenizer, examples, task): model-ready features (the task holds the lengths).
    collate(features): one batch, a dict of tensors for the head.
    hits(out, batch): per-example correctness, for the training accuracy (empty when there is none).
    score(logits, features, examples): the task metric of predict_logits' output over all features, in order.
    """

    name: str
    new_head: Callable[[AlbertConfig, int], nn.Module]
    targets: tuple[str, ...]
    features: Callable[..., list]
    collate: Callable[[Sequence], dict]
    hits: Callable[[object, dict], torch.Tensor]
    score: Callable[[torch.Tensor, Sequence, Sequence], dict]


def accuracy(logits: torch.Tensor, labels: Sequence[int]) -> float:
    """Fraction of rows whose arg-max is the label."""
    labels = torch.as_tensor(list(labels))
    if logits.shape[0] != labels.shape[0]:
        raise ValueError(f"{logits.shape[0]} predictions for {labels.shape[0]} labels")
    return float((logits.argmax(-1) == labels).float().mean())


def _label_hits(out, batch: dict) -> torch.Tensor:
    if out.logits.shape[-1] == 1:  # regression has no accuracy
        return torch.zeros(0)
    return out.logits.argmax(-1) == batch["labels"].view(-1)


def _span_hits(out, batch: dict) -> torch.Tensor:
    """A span counts when both the arg-max start and the arg-max end token are right."""
    return ((out.start_logits.argmax(-1) == batch["start_positions"].view(-1))
            & (out.end_logits.argmax(-1) == batch["end_positions"].view(-1)))


def _label_score(logits: torch.Tensor, features: Sequence, examples: Sequence) -> dict:
    return {"accuracy": accuracy(logits, [f.label for f in features]), "n": len(features)}


def _span_score(logits: torch.Tensor, features: Sequence, examples: Sequence) -> dict:
    """Exact match and F1 (in %) of the decoded answers, each example against all its gold answers."""
    contexts = {e.id: e.context for e in examples}
    return squad_scores(decode_spans(features, logits[..., 0], logits[..., 1], contexts), examples)


def _classification_features(tokenizer, examples, task) -> list:
    return classification_features(tokenizer, examples, task.max_length)


def _multiple_choice_features(tokenizer, examples, task) -> list:
    return [race_features(tokenizer, e, task.max_length, task.max_qa_length) for e in examples]


def _span_features(tokenizer, examples, task) -> list:
    """One feature per context window, so an example may give several."""
    return [f for e in examples for f in squad_features(tokenizer, e, task.max_length, task.doc_stride,
                                                        task.max_query_length)]


TASK_KINDS: dict[str, TaskKind] = {
    "classification": TaskKind(
        "classification", lambda config, num_labels: AlbertForSequenceClassification(config, num_labels),
        ("labels",), _classification_features, collate_classification, _label_hits, _label_score),
    "multiple_choice": TaskKind(
        "multiple_choice", lambda config, num_labels: AlbertForMultipleChoice(config),
        ("labels",), _multiple_choice_features, collate_multiple_choice, _label_hits, _label_score),
    "span": TaskKind(
        "span", lambda config, num_labels: AlbertForQuestionAnswering(config),
        ("start_positions", "end_positions"), _span_features, collate_spans, _span_hits, _span_score),
}


def task_kind(name: str) -> TaskKind:
    """The registered kind `name`; an unknown name is an error that lists the known ones."""
    return lookup(TASK_KINDS, name, "task kind")
