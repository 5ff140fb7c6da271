"""Host syncs per optimizer step: every value the host reads back from a tensor makes it wait for a GPU.

Counted on the CPU, where every read shows as a call: `Tensor.item`, `tolist`, `cpu`, `numpy`, `nonzero` and the
conversions `bool`, `float`, `int`, `index`, over 24 steps of a tiny `albert-mini pretrain` (the command's own
path), log, evaluation and save steps left out. When the metrics, the loss denominators and LAMB's trust ratios
were read on the host, a step made 35 of them (30 without `float`): LAMB's two `.item()` per weight tensor, the
metrics and the loss denominators. Now it makes one: the gradient norm, which clipping and the divergence check
read.
"""

from __future__ import annotations

import collections
import sys

import pytest
import torch

from albert_mini.model.albert import extended_attention_mask
from albert_mini.training.optim import build_optimizer
from albert_mini.training.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

READS = ("item", "tolist", "cpu", "numpy", "nonzero", "__bool__", "__float__", "__int__", "__index__")
# A read made only when the tensor is on the CPU (`extended_attention_mask`'s free check for a mask that keeps every
# token): on a GPU that line never reads, which `test_the_mask_check_reads_nothing_off_the_cpu` shows.
CPU_ONLY = {"extended_attention_mask"}


class ReadCounter:
    """Wraps the Tensor methods that read a value on the host; counts the calls made while `active`."""

    def __init__(self, monkeypatch):
        self.active, self.calls = False, collections.Counter()
        for name in READS:
            monkeypatch.setattr(torch.Tensor, name, self._wrap(name, getattr(torch.Tensor, name)))

    def _wrap(self, name, method):
        def counted(tensor, *args, **kwargs):
            if self.active:
                caller = sys._getframe(1)
                if caller.f_code.co_name not in CPU_ONLY:
                    self.calls[(name, caller.f_code.co_filename.split("albert_mini")[-1], caller.f_lineno)] += 1
            return method(tensor, *args, **kwargs)
        return counted

    def total(self) -> int:
        return sum(self.calls.values())


def test_an_optimizer_step_of_pretrain_reads_one_value_on_the_host(tmp_path, monkeypatch):
    from albert_mini.commands.pretrain import main

    counter = ReadCounter(monkeypatch)
    steps = []
    draw, train_step = Trainer._draw, Trainer.train_step

    def counted_draw(self):  # the micro-batches of a step and their denominators
        counter.active = True
        try:
            return draw(self)
        finally:
            counter.active = False

    def counted_step(self, *args, **kwargs):  # one optimizer step: no log, evaluation or save happens in here
        counter.active = True
        try:
            return train_step(self, *args, **kwargs)
        finally:
            counter.active = False
            steps.append(self.step)

    monkeypatch.setattr(Trainer, "_draw", counted_draw)
    monkeypatch.setattr(Trainer, "train_step", counted_step)
    main(["--preset", "albert-nano", "--corpus", "austen", "--seq-len", "64", "--batch-size", "4", "--steps", "24",
          "--log-every", "10", "--eval-every", "12", "--save-every", "12", "--eval-batches", "1", "--quiet",
          "--out", str(tmp_path / "run")])
    assert steps[-1] == 24 and len(steps) == 24
    per_step = counter.total() / len(steps)
    assert per_step <= 1, f"{per_step} host reads per optimizer step: {dict(counter.calls)}"
    (what, where, _), = counter.calls  # the one read: the gradient norm in clip_grad_global_norm
    assert what == "item" and where.endswith("optim.py")


def test_the_mask_check_reads_nothing_off_the_cpu(monkeypatch):
    """The one read left out of the count happens on the CPU only: a mask on another device is not read."""
    counter = ReadCounter(monkeypatch)
    mask = torch.ones(2, 5, dtype=torch.long)
    counter.active = True
    CPU_ONLY.clear()  # count it here
    try:
        assert extended_attention_mask(mask, torch.float32) is None  # the CPU: read, and no bias needed
        cpu_reads = counter.total()
        bias = extended_attention_mask(mask.to("meta"), torch.float32)  # stands in for a GPU: nothing to read
    finally:
        CPU_ONLY.add("extended_attention_mask")
    assert cpu_reads == 1 and counter.total() == 1 and bias.shape == (2, 1, 1, 5)


def test_lamb_reads_nothing_on_the_host(monkeypatch):
    from albert_mini import AlbertConfig, AlbertForPreTraining

    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    optimizer = build_optimizer(model, "lamb", lr=1e-3)
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    counter = ReadCounter(monkeypatch)
    counter.active = True
    optimizer.step()
    counter.active = False
    assert counter.total() == 0, dict(counter.calls)
