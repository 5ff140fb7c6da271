"""The short-then-long sequence curriculum (--short-seq-len): phases, exact resume, and flag checks."""

from __future__ import annotations

import pytest
import torch

from albert_mini.commands.pretrain import main as pretrain_main
from albert_mini.text.batch_source import PhasedBatches
from albert_mini.text.synthetic import SyntheticBatches


def phased(switch_after=3):
    return PhasedBatches(SyntheticBatches(50, 4, 8, seed=0), SyntheticBatches(50, 2, 16, seed=1), switch_after)


def test_batches_switch_length_after_the_first_phase():
    source = phased(switch_after=3)
    shapes = [tuple(next(source)["input_ids"].shape) for _ in range(5)]
    assert shapes == [(4, 8)] * 3 + [(2, 16)] * 2


@pytest.mark.parametrize("stop", [2, 3, 4])
def test_a_resumed_curriculum_continues_with_the_same_batches(stop):
    straight, first = phased(), phased()
    expected = [next(straight)["input_ids"] for _ in range(6)]
    for _ in range(stop):
        next(first)
    resumed = phased()
    resumed.load_state_dict(first.state_dict())
    rest = [next(resumed)["input_ids"] for _ in range(6 - stop)]
    assert all(torch.equal(a, b) for a, b in zip(expected[stop:], rest))


def test_a_position_saved_with_another_switch_point_is_refused():
    with pytest.raises(ValueError, match="--short-fraction"):
        phased(switch_after=4).load_state_dict(phased(switch_after=3).state_dict())


@pytest.mark.parametrize("flags, message", [
    (["--short-seq-len", "64"], "--short-seq-len must be in"),
    (["--short-seq-len", "24"], "divide it"),
    (["--short-seq-len", "16", "--short-fraction", "1"], "--short-fraction must be in"),
])
def test_curriculum_flags_that_cannot_work_are_refused(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as stop:
        pretrain_main(["--preset", "albert-nano", "--steps", "4", "--seq-len", "32", "--out", str(tmp_path / "r"),
                       *flags])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_the_cli_trains_short_then_long_and_evaluates_at_the_long_length(tmp_path, capsys):
    result = pretrain_main(["--preset", "albert-nano", "--steps", "4", "--batch-size", "4", "--seq-len", "32",
                            "--short-seq-len", "16", "--short-fraction", "0.5", "--eval-every", "0",
                            "--eval-batches", "1", "--save-every", "0", "--out", str(tmp_path / "r"), "--quiet"])
    assert result.step == 4
    assert result.eval is not None and 0 <= result.eval["mlm_acc"] <= 1
