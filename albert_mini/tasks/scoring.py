"""A classifier's answers example by example: what paired tests and constant-head checks read.

Two models scored on the same test examples are compared example by example (albert_mini.study.stats), so a score
keeps its per-example correctness as a string of 0/1 (`bits`). A head that gave one answer to every example has
learned nothing to test: `constant_head` finds it, and `answers` recovers a two-label classifier's answers from its
correctness alone. Chapter 8's live run and the fine-tuning experiment (albert_mini.harness.experiments.finetune)
both score with these.
"""

from __future__ import annotations

import torch

from ..text.tokenizer import Tokenizer
from .finetuning import FinetuneSettings, in_order, predict_logits
from .registry import get_task

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["answers", "constant_head", "correctness"]


def bits(correct: torch.Tensor) -> str:
    """Per-example correctness as a string of 0/1, the form results store for paired tests."""
    return "".join("1" if c else "0" for c in correct.tolist())


def test_predictions(model, task_name: str, settings: FinetuneSettings) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(predicted, true) labels of a label task's test examples (None for spans, scored by EM/F1)."""
    task = get_task(task_name)
    if task.kind == "span":
        return None
    examples = task.load(task.splits[-1])[:settings.max_eval_examples]
    features = task.features(Tokenizer.default(), examples)
    logits = predict_logits(model, in_order(features, task.collate, 32))
    return logits.argmax(-1), torch.tensor([f.label for f in features])


def correctness(model, task_name: str, settings: FinetuneSettings) -> str | None:
    """Per-test-example correctness of a label task (None for spans, scored by EM/F1): for paired tests."""
    predicted = test_predictions(model, task_name, settings)
    return None if predicted is None else bits(predicted[0] == predicted[1])


def answers(task_name: str, correct: str | None, max_examples: int | None) -> list[int] | None:
    """The distinct labels a two-label classifier predicted on the test examples, recovered from its per-example
    correctness (a wrong answer is the other label); None where correctness cannot tell (spans, multiple choice)."""
    task = get_task(task_name)
    if correct is None or task.kind != "classification":
        return None
    labels = [e.label for e in task.load(task.splits[-1])[:max_examples]]
    if len(set(labels)) != 2 or len(labels) != len(correct):
        return None
    low, high = sorted(set(labels))
    return sorted({y if bit == "1" else low + high - y for y, bit in zip(labels, correct)})


def constant_head(score: dict) -> bool:
    """Whether a score (a dict with the "answers" given, as results store them) came from a head or probe that gave
    one answer to every example."""
    return len(score.get("answers", [0, 1])) == 1
