"""Two fine-tuning tasks derived from held-out Austen chapters, stored in the official RACE and SQuAD formats.

- austen-mc (RACE JSON): a passage of 2-4 consecutive sentences, the question "Which sentence comes next?" and
  four options: the true next sentence and three sentences from other chapters of the same novel.
- austen-span (SQuAD v1.1 JSON): a passage of 2-4 sentences; the question is one of its sentences with a
  character's name replaced by "___", and the answer is that name where it stands in the passage.

The pretrained models saw only the corpus's "train" chapters, so the fine-tuning train sets come from the
"validation" chapters and the test sets from the "test" chapters. This module reads the committed files in
data/tasks/, sha256-checked; `albert-mini austen-tasks` rebuilds them byte for byte with the harness's builder
(`albert_mini/harness/data/build_austen_tasks.py`), and data/tasks/README.md gives their provenance and counts.
"""

from __future__ import annotations

from pathlib import Path

from ..paths import DATA_ROOT, verified_path
from ..text.corpus import CorpusError
from .formats import MultipleChoiceExample, SpanExample, load_race_json, load_squad_json

TASKS_DIR = DATA_ROOT / "tasks"
REBUILD_COMMAND = "albert-mini austen-tasks"
SOURCE_SPLITS = {"train": "validation", "test": "test"}  # task split -> corpus split it is built from


def _task_path(task: str, split: str, tasks_dir: str | Path | None) -> Path:
    if split not in SOURCE_SPLITS:
        raise ValueError(f"unknown split {split!r}; the derived tasks have {', '.join(SOURCE_SPLITS)}")
    return verified_path(Path(tasks_dir) if tasks_dir else TASKS_DIR, f"{task}/{split}.json", REBUILD_COMMAND,
                         CorpusError)


def load_austen_mc(split: str, tasks_dir: str | Path | None = None) -> list[MultipleChoiceExample]:
    """austen-mc "train" (from validation chapters) or "test" (from test chapters), sha256-checked."""
    return load_race_json(_task_path("austen_mc", split, tasks_dir))


def load_austen_span(split: str, tasks_dir: str | Path | None = None) -> list[SpanExample]:
    """austen-span "train" (from validation chapters) or "test" (from test chapters), sha256-checked."""
    return load_squad_json(_task_path("austen_span", split, tasks_dir))
