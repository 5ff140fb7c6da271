"""What the tests of Table 5's branches share (test_levers.py, test_sop_escape.py): the fast trunk's checkpoint,
trained once per session for every xdist worker, and a way to kill a branch at one of its optimizer steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from fast_results import session_lock

from albert_mini.harness.experiments import trunk as trunk_module


class Killed(Exception):
    """What a branch dies of in a test: raised by the optimizer step `die_at_step` picks."""


def fast_trunk_checkpoint(tmp_path_factory) -> Path:
    """The fast trunk's checkpoint at its last step, trained by the first test of the session that asks (the
    branches only read it).

    Trained without the trunk's probes at its probe steps: they are most of its cost (7 s at each of its two probe
    steps, against 1 s of training), the branches never read them, and scoring leaves the weights, the optimizer's
    moments and the random state as they were (the checkpoint's weights come out byte for byte the same)."""
    with session_lock(tmp_path_factory, "fast-trunk") as root:
        folder = root / "fast-trunk"
        checkpoint = trunk_module.trunk_checkpoint(folder, trunk_module.FAST_TRUNK.stop)
        if not checkpoint.is_dir():
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(trunk_module, "score_point", lambda *args, **kwargs: {})
                trunk_module.train_trunk(trunk_module.FAST_TRUNK, folder)
        return checkpoint


def die_at_step(optimizer, step: int) -> None:
    """Make the `step`-th call of `optimizer.step` from now raise Killed, before it changes anything."""
    real_step, calls = optimizer.step, []

    def counted(*args, **kwargs):
        calls.append(1)
        if len(calls) == step:
            raise Killed
        return real_step(*args, **kwargs)

    optimizer.step = counted
