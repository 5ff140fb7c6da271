"""The run as software, subscribed to the trainer's events (training/trainer.py).

The console, the log, the checkpoints and exact resume, the stop rules (time budget, preemption); the run
directory (directory.py) and the memory check (fits.py) for every caller that builds a run.
"""

from __future__ import annotations

from .budget import StopRules
from .checkpoints import Checkpoints
from .console import Console
from .log import MetricsLog


def standard_shell(trainer) -> list:
    """The subscribers the trainer's config asks for, in the order they hear an event: the stop rules decide
    before the checkpoints ask for a periodic save; the log writes before the console shows."""
    callbacks = [StopRules()]
    if trainer.config.out_dir:
        callbacks += [Checkpoints(trainer), MetricsLog(trainer.config.out_dir)]
    return [*callbacks, Console()]
