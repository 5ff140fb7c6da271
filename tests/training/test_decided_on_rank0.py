"""A run-folder decision is made on rank 0 and heard by every rank, error included: checked in one process, the
ranks of a two-process world played in turn over a fake broadcast that hands rank 0's object to the others."""

from __future__ import annotations

import pytest

from albert_mini.training import rundir
from albert_mini.training.distributed import DistInfo
from albert_mini.training.shell import directory


@pytest.fixture
def world(monkeypatch):
    """Two ranks played in turn: rank 0 first, whose broadcast object every later rank receives."""
    sent = []

    def broadcast(obj, info):
        if info.rank == 0:
            sent.append(obj)
            return obj
        return sent[-1]

    monkeypatch.setattr(directory, "broadcast_object", broadcast)
    return [DistInfo(rank=0, world_size=2), DistInfo(rank=1, world_size=2)]


def test_every_rank_gets_the_value_decided_on_rank_0(world):
    calls = []

    def decide():
        calls.append(1)
        return {"resume": True, "checkpoint": "step-4"}

    decided = [directory.decided_on_rank0(decide, info) for info in world]
    assert decided == [{"resume": True, "checkpoint": "step-4"}] * 2
    assert calls == [1]  # rank 1 never decides for itself


def test_an_error_on_rank_0_is_raised_on_every_rank(world):
    def decide():
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        directory.decided_on_rank0(decide, world[0], "rank 0 could not settle runs/a: ")
    with pytest.raises(rundir.RunDirError, match="^rank 0 could not settle runs/a: disk full$"):
        directory.decided_on_rank0(decide, world[1], "rank 0 could not settle runs/a: ")
