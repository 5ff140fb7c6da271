"""What a newcomer edits to change the recipe: a loss is the model plus one entry of objectives.LOSSES, a schedule
one entry of optim.SCHEDULES. Each test makes that edit here, as a user would make it in those files, and trains."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.errors import UsageError
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training import objectives
from albert_mini.training.objectives import Loss, PretrainingObjective
from albert_mini.training.optim import SCHEDULES, WarmupDecay, build_optimizer, build_schedule
from albert_mini.training.run import build_optimization
from albert_mini.training.setup import PretrainingSetup
from albert_mini.training.trainer import TrainConfig, Trainer, evaluate

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

CONFIG = AlbertConfig.from_preset("albert-nano")


# ---------------------------------------------------------------------- a third loss
class WithSegmentLoss(AlbertForPreTraining):
    """The edit of model/albert.py: a head that says which segment each real token is in, its loss summed over the
    tokens and counted, next to the MLM and sentence losses."""

    def __init__(self, config):
        super().__init__(config)
        self.segment_head = nn.Linear(config.hidden_size, 2)
        self.albert.register_forward_hook(self._keep_hidden)

    def _keep_hidden(self, module, args, out):
        self._hidden = out.last_hidden_state

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, **kwargs):
        out = super().forward(input_ids, attention_mask, token_type_ids, **kwargs)
        real = attention_mask.bool()
        out.segment_logits = self.segment_head(self._hidden)[real]  # (N, 2): the real tokens, row-major
        out.segment_loss_sum = F.cross_entropy(out.segment_logits, token_type_ids[real], reduction="sum")
        out.segment_count = real.sum()
        return out


# The edit of objectives.py: one entry of LOSSES.
SEGMENT = Loss(denominator=lambda batch: batch["attention_mask"].sum(),
               correct=lambda out, batch: (out.segment_logits.argmax(-1)
                                           == batch["token_type_ids"][batch["attention_mask"].bool()]).sum())


def test_a_third_loss_is_the_model_and_one_entry_of_the_losses(monkeypatch):
    monkeypatch.setitem(objectives.LOSSES, "segment", SEGMENT)
    torch.manual_seed(0)
    model = WithSegmentLoss(CONFIG)
    head_before = model.segment_head.weight.detach().clone()
    steps = 4
    trainer = Trainer(model, build_optimizer(model, "adamw", lr=1e-2), build_schedule("linear", 1e-2, steps),
                      SyntheticBatches(CONFIG.vocab_size, 4, 16, seed=5),
                      TrainConfig(max_steps=steps, accumulate=2, log_every=2, progress=False))
    result = trainer.train()
    lines = [m for m in result.history if m["type"] == "train"]
    assert [m["step"] for m in lines] == [2, 4]
    for m in lines:  # the trainer reports it by name, and optimises the sum of the three
        assert 0 < m["segment_loss"] < 10 and 0 <= m["segment_acc"] <= 1
        assert m["loss"] == pytest.approx(m["mlm_loss"] + m["sentence_loss"] + m["segment_loss"], rel=1e-12)
    assert not torch.equal(model.segment_head.weight, head_before)  # its gradient reached the update
    batch = SyntheticBatches(CONFIG.vocab_size, 4, 16, seed=6).batch(0, 0)
    held_out = evaluate(model, [batch])
    with torch.no_grad():
        out = model.eval()(**batch)
    assert held_out["segment_loss"] == pytest.approx(float(out.segment_loss_sum / out.segment_count), rel=1e-6)
    # Per token over the whole effective batch: the loss of a step is the mean over both micro-batches' tokens.
    objective = PretrainingObjective()
    halves = [SyntheticBatches(CONFIG.vocab_size, 4, 16, seed=7).batch(0, i) for i in range(2)]
    totals = {name: sum(objective.denominators(b)[name] for b in halves) for name in objective.loss_terms}
    with torch.no_grad():
        summed = sum(objective(model(**b), b, totals)[0] for b in halves)
        whole = {k: torch.cat([h[k] for h in halves]) for k in halves[0]}
        assert float(summed) == pytest.approx(float(objective(model(**whole), whole,
                                                              objective.denominators(whole))[0]), rel=1e-5)


def test_without_the_entry_the_same_model_trains_on_two_losses():
    torch.manual_seed(0)
    model = WithSegmentLoss(CONFIG)
    trainer = Trainer(model, build_optimizer(model, "adamw", lr=1e-2), build_schedule("linear", 1e-2, 2),
                      SyntheticBatches(CONFIG.vocab_size, 4, 16, seed=5),
                      TrainConfig(max_steps=2, log_every=2, progress=False))
    (line,) = trainer.train().history
    assert "segment_loss" not in line and line["loss"] == pytest.approx(line["mlm_loss"] + line["sentence_loss"])


# ---------------------------------------------------------------------- a schedule
def cosine(peak_lr, total_steps, warmup_steps):
    """The edit of optim.py: warm-up, then half a cosine down to 0 at the last step."""
    return WarmupDecay(peak_lr, total_steps, warmup_steps, lambda f: 0.5 * (1 + math.cos(math.pi * f)), "cosine")


def test_a_cosine_schedule_is_one_entry_of_the_table(monkeypatch):
    with pytest.raises(UsageError, match="decay must be one of linear, constant, got 'cosine'"):
        PretrainingSetup(steps=100, decay="cosine")
    monkeypatch.setitem(SCHEDULES, "cosine", cosine)
    setup = PretrainingSetup(steps=100, warmup=10, lr=1e-3, decay="cosine")  # the flag takes it at once
    torch.manual_seed(0)
    model = AlbertForPreTraining(CONFIG)
    optimizer, schedule = build_optimization(setup, model)
    # As the reference's decay: a function of the steps done out of all of them, warm-up included.
    after_warmup = 1e-3 * 0.5 * (1 + math.cos(math.pi * 0.1))
    assert [schedule(t) for t in (0, 5, 10, 50, 100)] == pytest.approx([0, 5e-4, after_warmup, 5e-4, 0], abs=1e-12)
    assert schedule.apply(optimizer, 50) == pytest.approx(5e-4) and optimizer.param_groups[0]["lr"] == schedule(50)
    linear = build_schedule("linear", 1e-3, 100, 10)
    assert linear.state_dict() != schedule.state_dict()  # a resume with the other schedule is refused
    assert 0 < schedule(80) < linear(80)  # the cosine's tail is lower
