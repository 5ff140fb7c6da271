"""When a run stops early: its time budget (--minutes) spent, or a signal asking it to (preemption).

Both are checked between optimizer steps, never inside one: a step is always whole, and the budget is overrun by
at most the step under way when it ran out. Under DDP rank 0's clock decides and a signal on any rank stops them
all, carried by one all-reduce a step (`stop_votes`). A stop by the budget ends the run as a finished one (its
last lines, its checkpoint), so the same command rerun trains nothing; a stop by SIGTERM or SIGUSR1 saves the
step reached without end lines and raises Preempted, so the resumed run logs as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

from .. import preemption
from ..distributed import stop_votes

PREEMPTED = "preempted"  # the stop reason of a run ended by SIGTERM or SIGUSR1


class StopRules:
    """Sets `control.stop` to "max_minutes" once the budget is spent; saves and raises Preempted on a signal."""

    def __init__(self):
        self._watching = contextlib.ExitStack()

    def on_start(self, trainer, control) -> None:
        self._watching.enter_context(preemption.watching())
        self._vote(trainer, control)

    def on_step_end(self, trainer, control) -> None:
        self._vote(trainer, control)

    def on_close(self, trainer) -> None:
        self._watching.close()

    def _vote(self, trainer, control) -> None:
        if trainer.step >= trainer.config.max_steps:
            return  # the run ends here anyway, on every rank alike
        budget = trainer.config.max_minutes
        spent, asked = stop_votes(budget is not None and trainer.elapsed >= 60 * budget,
                                  preemption.requested() is not None, trainer.dist)
        if spent:
            control.stop = "max_minutes"
        elif asked:
            self._preempted(trainer)

    def _preempted(self, trainer) -> None:
        """Save the step reached (its log window too: no end lines are written) and raise Preempted with the line
        that says so (one a node: local rank 0's)."""
        mine = preemption.requested()
        signum = mine or signal.SIGTERM  # another rank was signalled: this one ends as SIGTERM ends it
        by = preemption.signal_name(mine) if mine else "a signal to another rank"
        out = trainer.config.out_dir
        if out is not None and trainer.step > 0 and trainer.last_saved_step != trainer.step:
            trainer.save()
        if out is None:
            kept = "nothing is saved without an output folder, so the run starts again from the beginning"
        elif trainer.last_saved_step == trainer.step:
            kept = (f"checkpoint step-{trainer.step:07d} in {Path(out) / 'checkpoints'} holds it; the same command "
                    "resumes from there, bit for bit")
        else:
            kept = "no step was trained, so there was nothing to save; the same command starts it again"
        message = f"stopped by {by} after step {trainer.step} (preemption); {kept}"
        raise preemption.Preempted(message if trainer.dist.local_rank == 0 else "", signum)
