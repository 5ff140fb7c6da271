"""Fine-tuning tasks: data of one kind plus a loader. The shipped ones by name, and any official-format files.

Adding a task means one TASKS entry (its kind, splits, lengths and a function split -> examples); a new file
format is one FILE_FORMATS entry (its kind and a function path -> examples).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import lookup
from .austen_tasks import load_austen_mc, load_austen_span
from .formats import GLUE_FORMATS, load_glue_tsv, load_race_json, load_squad_json
from .polarity import load_polarity

if TYPE_CHECKING:  # the kinds build torch heads: a task's name and files need no torch (albert-mini help finetune)
    from .kinds import TaskKind

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["TASKS", "get_task"]


@dataclass(frozen=True)
class Task:
    """A fine-tuning task: its kind (the head), where its examples come from, and the lengths of its inputs."""

    name: str
    kind: str  # a key of albert_mini.tasks.kinds.TASK_KINDS
    splits: tuple[str, ...]  # the first is trained on, the last is reported
    loader: Callable[[str], list]  # split -> examples
    max_length: int
    num_labels: int = 2  # classification only
    max_qa_length: int = 64  # multiple choice: question + option tokens kept (their last ones)
    doc_stride: int = 128  # spans: how far consecutive windows of a long context are apart
    max_query_length: int = 64  # spans: question tokens kept (their first ones)

    @property
    def spec(self) -> TaskKind:
        """The kind's head, features, collation and score."""
        from .kinds import task_kind

        return task_kind(self.kind)

    def load(self, split: str) -> list:
        """The task's examples of `split`, read from data/ (or cache/ for data that may not be committed)."""
        if split not in self.splits:
            raise ValueError(f"{self.name} has splits {self.splits}, not {split!r}")
        return self.loader(split)

    def features(self, tokenizer, examples) -> list:
        """Model-ready features: one per example, or one per context window for spans."""
        return self.spec.features(tokenizer, examples, self)

    def collate(self, features) -> dict:
        return self.spec.collate(features)


# 128 tokens everywhere: the shipped encoder was pretrained on 128-token sequences, so positions beyond that have
# never been trained (data/tasks keeps passages short enough to fit).
TASKS: dict[str, Task] = {
    "polarity": Task("polarity", "classification", ("train", "validation", "test"), load_polarity, max_length=128),
    "austen-mc": Task("austen-mc", "multiple_choice", ("train", "test"), load_austen_mc, max_length=128,
                      max_qa_length=64),
    "austen-span": Task("austen-span", "span", ("train", "test"), load_austen_span, max_length=128, doc_stride=64,
                        max_query_length=48),
}


@dataclass(frozen=True)
class FileFormat:
    """An official file format: the kind of task it holds and how a file of it is read."""

    kind: str
    load: Callable[[str | Path], list]
    num_labels: int = 2


FILE_FORMATS: dict[str, FileFormat] = {
    "race": FileFormat("multiple_choice", load_race_json),
    "squad": FileFormat("span", load_squad_json),
    "sst2": FileFormat("classification", functools.partial(load_glue_tsv, task="sst2"),
                       len(GLUE_FORMATS["sst2"].labels)),
    "mnli": FileFormat("classification", functools.partial(load_glue_tsv, task="mnli"),
                       len(GLUE_FORMATS["mnli"].labels)),
}


def file_task(fmt: str, train_path: str | Path, test_path: str | Path, max_length: int = 128) -> Task:
    """A task read from official-format files: RACE JSON, SQuAD v1.1 JSON, or GLUE TSV (SST-2, MNLI)."""
    spec = lookup(FILE_FORMATS, fmt, "format")
    files = {"train": str(train_path), "test": str(test_path)}
    return Task(f"{fmt}:{Path(train_path).name}", spec.kind, ("train", "test"), lambda split: spec.load(files[split]),
                max_length=max_length, num_labels=spec.num_labels)


def get_task(name: str) -> Task:
    """A shipped task by name."""
    return lookup(TASKS, name, "task")
