"""The trainer's batch sources share one walk: batch `index` of `epoch`, regenerated on demand, resumable exactly.

A source is an iterator of batches (dicts of tensors). Because every batch is a pure function of the source's
settings and its position (epoch, index), a checkpoint only has to store the position: `state_dict()` is the
position plus the settings, and `load_state_dict()` refuses a position saved under other settings.
"""

from __future__ import annotations


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
        while self.index >= self.batches_in_epoch(self.epoch):
            if self.num_epochs is not None and self.epoch + 1 >= self.num_epochs:
                raise StopIteration
            self.epoch, self.index = self.epoch + 1, 0
        batch = self.batch(self.epoch, self.index)
        self.index += 1
        return batch

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

    def __next__(self) -> dict:
        source = self.first if self.drawn < self.switch_after else self.then
        batch = next(source)
        self.drawn += 1
        return batch

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
