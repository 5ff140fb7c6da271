"""The paper's findings at mini scale: one module per experiment (run, figure, table), registered by name."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import ModuleType

from ...paths import save_figure
from . import embedding_size, finetune, memory, sentence_task, sharing, smoothness, throughput
from .common import FULL, Budget, current_budget, results_dir, write_result

# Adding an experiment: a module with run(budget) -> dict, figure(result) -> Figure and table(result) -> str, and
# one line here. `all` runs them in this order.
EXPERIMENTS: dict[str, ModuleType] = {
    "sentence_task": sentence_task,
    "sharing": sharing,
    "embedding_size": embedding_size,
    "smoothness": smoothness,
    "throughput": throughput,
    "memory": memory,
    "finetune": finetune,
}


def run(name: str, budget: Budget | None = None, out_dir: Path | None = None) -> Path:
    """Run experiment `name`, write <out_dir>/<name>.json and its figure; returns the JSON's path.

    Figures of the full budget go to figures/experiment_<name>.png; other budgets keep theirs beside the JSON.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    budget = budget or current_budget()
    start = time.perf_counter()
    payload = EXPERIMENTS[name].run(budget)
    path = write_result(name, payload, budget, out_dir or results_dir(), time.perf_counter() - start)
    fig = EXPERIMENTS[name].figure(json.loads(path.read_text()))  # drawn from what was written, as a reader sees it
    save_figure(fig, f"experiment_{name}.png", None if budget == FULL else path.parent)
    return path


def results_tables(folder: Path) -> str:
    """Markdown tables of every result in `folder`, each next to the paper's numbers."""
    tables = []
    for name, experiment in EXPERIMENTS.items():
        path = Path(folder) / f"{name}.json"
        if path.exists():
            tables.append(experiment.table(json.loads(path.read_text())) + "\n")
    return "\n".join(tables)
