"""Preemption: SIGTERM or SIGUSR1, what a cluster scheduler sends before it takes the machine, ends a command's
training run after the step under way, with a checkpoint, one line and a non-zero exit status (128 + the signal,
as a shell reports a process the signal ended), so that the scheduler requeues the job and the same command
resumes it bit for bit.

The commands that train (`pretrain`, `finetune`) call `enable()`; the trainer then catches the two signals while
its loop runs (`watching`), and nowhere else: before the loop (reading and preparing the text) a signal still ends
the process at once, as nothing is trained yet, and a program that imports the package (a notebook's kernel, a
test) keeps its own handlers. Under DDP the ranks vote after every step (one all-reduce the loop makes anyway),
so a signal on any rank stops every rank after the same step.

A second signal ends the process at once, with one line (a checkpoint being written is atomic: the newest
checkpoint on disk stays whole). A repeat within `REPEAT_S` of the first is taken as the same signal delivered
twice: a scheduler that signals every process of a job, and torchrun's agent forwarding the one it got, deliver
one signal twice within milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from ..errors import UserError

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)
REPEAT_S = 2.0  # a second delivery sooner than this is the same signal (forwarded), not a second request

_state = {"enabled": False, "signum": None, "at": 0.0}


class Preempted(UserError):
    """A run stopped by SIGTERM or SIGUSR1 after a whole step, saved; the command exits with 128 + the signal."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.exit_status = 128 + signum


def enable() -> None:
    """Let the trainer catch SIGTERM and SIGUSR1 while it trains (the training commands call this)."""
    _state["enabled"] = True


def requested() -> int | None:
    """The signal asking this process to stop after its step, or None."""
    return _state["signum"]


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


def _on_signal(signum, frame) -> None:
    now = time.monotonic()
    if _state["signum"] is None:
        _state["signum"], _state["at"] = signum, now
        return
    if now - _state["at"] < REPEAT_S:
        return  # the first signal forwarded: the step and the save go on
    print(f"error: stopped at once by a second {signal_name(signum)}; the same command resumes the run from its "
          "newest checkpoint", file=sys.stderr, flush=True)
    os._exit(128 + signum)


@contextlib.contextmanager
def watching():
    """While the block runs, SIGTERM and SIGUSR1 ask for a stop after the step (when `enable` was called, in the
    main thread only: Python runs handlers there); the previous handlers come back after it unless a stop was
    asked."""
    if not _state["enabled"] or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    _state["signum"] = None
    for s in SIGNALS:
        signal.signal(s, _on_signal)
    try:
        yield
    finally:
        if _state["signum"] is None:  # once asked, the process is ending: a second signal still ends it at once
            for s, handler in previous.items():
                signal.signal(s, handler)
