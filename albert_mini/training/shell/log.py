"""The run's log, metrics.jsonl: one JSON line per train, eval and resume record, appended and never rewritten.

Rank 0 appends each line as the trainer logs it. A resumed run appends a resume line naming the step it continues
from, then the lines it logs from there; readers (rundir.read_metrics) take, for each kind and step, the last line,
and drop what an earlier life of the run logged beyond the step a resume line continues from: the log reads as one
uninterrupted run. A line torn by a kill is skipped by readers; the next append starts on a line of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..rundir import METRICS_FILE


class MetricsLog:
    """Appends every metric line of the trainer to out_dir/metrics.jsonl (rank 0)."""

    def __init__(self, out_dir: str | Path):
        self.path = Path(out_dir) / METRICS_FILE
        self._started = False

    def on_log(self, trainer, metrics: dict) -> None:
        if not trainer.dist.is_main:
            return
        if not self._started:  # a torn last line of an earlier life: end it, so this line stands on its own
            self._started = True
            if self.path.is_file() and self.path.stat().st_size:
                with open(self.path, "rb") as f:
                    f.seek(-1, 2)
                    torn = f.read(1) != b"\n"
                if torn:
                    with open(self.path, "a") as f:
                        f.write("\n")
        with open(self.path, "a") as f:
            f.write(json.dumps(metrics) + "\n")
