"""The trainer's batch sources share one walk: batch `index` of `epoch`, regenerated on demand, resumable exactly.

A source is an iterator of batches (dicts of tensors). Because every batch is a pure function of the source's
settings and its position (epoch, index), a checkpoint only has to store the position: `state_dict()` is the
position plus the settings, and `load_state_dict()` refuses a position saved under other settings.

torchdata's StatefulDataLoader was tried in place of LoadedBatches (benchmarks/stateful_loader_trial.py; numbers
and reasons in benchmarks/results/stateful_loader_trial.md): it resumed bit-identically too, but its state depends
on the worker count, cannot read this position format, and lacks the workers' signal hooks, so it was not kept.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import signal
import sys
import threading
import weakref
from collections import deque

import torch
from torch.utils.data import DataLoader, Dataset


class BatchSource:
    """Base class: a subclass defines `batch(epoch, index)` and `batches_in_epoch(epoch)`; this class walks.

    `next(source)` gives batch `index` of the current epoch and moves on, into the next epoch when one ends; it
    raises StopIteration after `num_epochs` epochs (None: never). `settings()` names what decides the batches.
    """

    num_epochs: int | None = None

    def __init__(self, epoch: int = 0):
        self.epoch, self.index = epoch, 0

    # ------------------------------------------------------------------ what a subclass defines
    def batch(self, epoch: int, index: int) -> dict:
        raise NotImplementedError

    def batches_in_epoch(self, epoch: int) -> float:
        """Batches in `epoch` (float("inf") for an endless stream)."""
        raise NotImplementedError

    def settings(self) -> dict:
        """Plain values of everything that decides the batches; a resumed source must have the same."""
        return {}

    # ------------------------------------------------------------------ the walk
    def __iter__(self):
        return self

    def __next__(self) -> dict:
        return self.build(self.plan())

    def plan(self) -> tuple:
        """Move past the next batch without building it; returns what `build` needs to build it (a ticket)."""
        while self.index >= self.batches_in_epoch(self.epoch):
            if self.num_epochs is not None and self.epoch + 1 >= self.num_epochs:
                raise StopIteration
            self.epoch, self.index = self.epoch + 1, 0
        self.index += 1
        return self.epoch, self.index - 1

    def build(self, ticket: tuple) -> dict:
        """The batch a ticket of `plan` names: a pure function of it, so another process builds the same bits."""
        return self.batch(*ticket)

    def position(self) -> tuple:
        """Where the walk stands, as plain values (`set_position` goes back there)."""
        return self.epoch, self.index

    def set_position(self, position: tuple) -> None:
        self.epoch, self.index = position

    def take(self, n: int) -> list[dict]:
        """The first n batches of the current epoch as a list (a re-iterable validation set)."""
        return [self.batch(self.epoch, i) for i in range(n)]

    def state_dict(self) -> dict:
        """The exact position (the next batch to yield) and the settings that decide the data."""
        return {"epoch": self.epoch, "index": self.index, **self.settings()}

    def load_state_dict(self, state: dict) -> None:
        """Continue from a saved position; refuse one saved with different settings."""
        for key, value in self.settings().items():
            if state.get(key) != value:
                raise ValueError(f"the saved data position was made with {key}={state.get(key)}, this source has "
                                 f"{key}={value}; rebuild the source with the saved settings to resume exactly")
        self.epoch, self.index = int(state["epoch"]), int(state["index"])


class PhasedBatches(BatchSource):
    """A two-phase curriculum: the first `switch_after` batches from `first`, then the rest from `then`.

    BERT trained 90% of its steps on short sequences and the last 10% on long ones, because attention costs grow
    with length and short text teaches most of what long text does; `--short-seq-len` in the pretraining CLI uses
    this source. The position is the number of batches drawn plus both sources' own positions, so a run resumed
    from a checkpoint continues in the right phase at the right batch.
    """

    def __init__(self, first: BatchSource, then: BatchSource, switch_after: int):
        if switch_after < 0:
            raise ValueError(f"switch_after must be >= 0, got {switch_after}")
        super().__init__()
        self.first, self.then, self.switch_after, self.drawn = first, then, switch_after, 0

    def plan(self) -> tuple:
        phase = 0 if self.drawn < self.switch_after else 1
        ticket = (self.first, self.then)[phase].plan()
        self.drawn += 1
        return phase, ticket

    def build(self, ticket: tuple) -> dict:
        phase, inner = ticket
        return (self.first, self.then)[phase].build(inner)

    def position(self) -> tuple:
        return self.drawn, self.first.position(), self.then.position()

    def set_position(self, position: tuple) -> None:
        self.drawn, first, then = position
        self.first.set_position(first)
        self.then.set_position(then)

    @property
    def max_predictions(self) -> int | None:
        """The larger cap of the two phases (None when either has none)."""
        caps = [getattr(self.first, "max_predictions", None), getattr(self.then, "max_predictions", None)]
        return None if None in caps else max(caps)

    def take(self, n: int) -> list[dict]:
        return self.then.take(n)

    def settings(self) -> dict:
        return {"switch_after": self.switch_after}

    def state_dict(self) -> dict:
        return {"drawn": self.drawn, "first": self.first.state_dict(), "then": self.then.state_dict(),
                **self.settings()}

    def load_state_dict(self, state: dict) -> None:
        if state.get("switch_after") != self.switch_after:
            raise ValueError(f"the saved data position switches phase after {state.get('switch_after')} batches, "
                             f"this source after {self.switch_after}; resume with the saved --short-fraction")
        self.first.load_state_dict(state["first"])
        self.then.load_state_dict(state["then"])
        self.drawn = int(state["drawn"])


class _Tickets(Dataset):
    """A map-style view of a source for a DataLoader: item `ticket` is the batch `source.build(ticket)`."""

    def __init__(self, source: BatchSource):
        self.source = source

    def __getitem__(self, ticket):
        return self.source.build(ticket)


class LoadedBatches:
    """A BatchSource fed like a GPU job: a torch DataLoader whose `workers` processes build the next batches while
    the model trains, into pinned memory when `pin_memory` (for copies to a CUDA device that do not block).

    This process plans the walk (`plan`: positions only, cheap) and the workers build each batch from its ticket, a
    pure function of it, so the batches are the same bits with and without workers, in the same order, and a
    checkpoint's data position is the source's own: `state_dict()` is where the batches handed out so far end, not
    how far the workers have read ahead, and `load_state_dict` starts the loader again from there.

    The workers let SIGTERM, SIGUSR1 and SIGINT pass (`_start_worker`): a scheduler or a terminal's Ctrl-C signals
    every process of the group, and the run they feed decides what the signal means (a preempted run saves, see
    training/preemption.py). They still end with it: at its exit (`_close_at_exit`), or with it however it ends.
    """

    def __init__(self, source: BatchSource, workers: int = 0, pin_memory: bool = False, prefetch: int = 2):
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.source, self.workers, self.pin_memory, self.prefetch = source, workers, pin_memory, prefetch
        self._iter = None

    @property
    def max_predictions(self) -> int | None:
        return getattr(self.source, "max_predictions", None)

    def _start(self) -> None:
        self._given = self.source.position()  # after the last batch handed out
        self._after: deque = deque()  # the position after each ticket the loader has asked for, in order

        def tickets():
            while True:
                try:
                    ticket = self.source.plan()
                except StopIteration:
                    return
                self._after.append(self.source.position())
                yield ticket

        # `_start_worker` is given this process's pid, and whether the thread that forks the workers is the main
        # thread, which lives as long as the process.
        start = functools.partial(_start_worker, os.getpid(), threading.current_thread() is threading.main_thread())
        # Its own generator: the worker seeds a DataLoader draws would otherwise come from torch's global RNG and
        # shift every dropout mask after it (the batches themselves use no global RNG).
        loader = DataLoader(_Tickets(self.source), batch_size=None, sampler=_Iterable(tickets),
                            num_workers=self.workers, pin_memory=self.pin_memory,
                            prefetch_factor=self.prefetch if self.workers else None,
                            generator=torch.Generator().manual_seed(0),
                            worker_init_fn=start if self.workers else None)
        with _group_signals_held() if self.workers else contextlib.nullcontext():
            self._iter = iter(loader)  # (the workers start here)
        if self.workers:
            _close_at_exit(self)

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        if self._iter is None:
            self._start()
        batch = next(self._iter)
        self._given = self._after.popleft()
        return batch

    def take(self, n: int) -> list[dict]:
        return self.source.take(n)

    def state_dict(self) -> dict:
        """The source's state at the end of the batches handed out (the workers may have planned further)."""
        if self._iter is None:
            return self.source.state_dict()
        ahead = self.source.position()
        self.source.set_position(self._given)
        try:
            return self.source.state_dict()
        finally:
            self.source.set_position(ahead)

    def load_state_dict(self, state: dict) -> None:
        """Go to a saved position; the batches read ahead are dropped and the loader starts again from there."""
        self.close()
        self.source.load_state_dict(state)

    def close(self) -> None:
        """Stop the workers and give the batches they read ahead back to the source."""
        if self._iter is not None:
            end_workers(self._iter)
            self._iter = None
            self.source.set_position(self._given)
        _open_loaders.discard(self)


# What a scheduler (SIGTERM, SIGUSR1) or a terminal's Ctrl-C (SIGINT) sends to every process of a job's group.
GROUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGUSR1", "SIGINT") if hasattr(signal, name))


@contextlib.contextmanager
def _group_signals_held():
    """Hold GROUP_SIGNALS back from this thread while the block runs (where the platform can): a worker forked in
    it starts with them held, until `_start_worker` ignores them, so none ends a worker before that; one that
    arrives meanwhile reaches this process when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, GROUP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _start_worker(parent: int, forked_by_main_thread: bool, worker_id: int) -> None:
    """A loader worker's first act: let the group's signals pass, and end with the process it feeds."""
    for signum in GROUP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, GROUP_SIGNALS)  # (held since the fork; now ignored)
    # torch's workers see their parent's end themselves, within seconds; on Linux the kernel ends them at once
    # (a second signal ends the parent with os._exit, and SIGKILL runs nothing). The death signal follows the
    # thread that forked: only the main thread lives as long as the process.
    if forked_by_main_thread and sys.platform.startswith("linux"):
        from .token_cache import die_with_parent

        die_with_parent(parent)


def end_workers(iterator) -> None:
    """Stop a DataLoader iterator's worker processes: torch's shutdown, then a kill for one still building after
    torch's wait (its SIGTERM is ignored, `_start_worker`)."""
    if hasattr(iterator, "_shutdown_workers"):
        iterator._shutdown_workers()
    for worker in getattr(iterator, "_workers", ()):
        if worker.is_alive():
            worker.kill()
            worker.join()


_open_loaders: weakref.WeakSet = weakref.WeakSet()  # the LoadedBatches whose workers run (closed at exit)
_exit_hook = []  # the hook that closes them, once registered


def _close_at_exit(loaded: LoadedBatches) -> None:
    """Stop `loaded`'s workers when Python exits (unless closed before): they ignore the SIGTERM with which
    multiprocessing's exit ends the workers left running (it would wait for them forever), and torch's loader
    stops its own only until its exit flag is set. The hook is registered once, after torch and multiprocessing
    registered theirs (multiprocessing's once a loader made its queues), so it runs before them."""
    if not _exit_hook:
        _exit_hook.append(atexit.register(_close_open_loaders))
    _open_loaders.add(loaded)


def _close_open_loaders() -> None:
    for loaded in list(_open_loaders):
        loaded.close()


class _Iterable:
    """A sampler from a generator function: each `iter` starts the walk where the source stands."""

    def __init__(self, make):
        self.make = make

    def __iter__(self):
        return self.make()
