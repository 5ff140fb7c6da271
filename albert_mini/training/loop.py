"""Pretraining in one plain loop: batch, forward, loss, backward, clip, step, schedule.

This is what `albert_mini.training.trainer.Trainer` does on one process with one micro-batch per step, and it
gives the very same numbers. The Trainer adds gradient accumulation, several processes, logging, evaluation,
checkpoints and exact resume around these lines, and what a GPU needs to stay busy (a source with a masking cap has
its MLM head run at fixed positions: the same loss up to rounding; see albert_mini.training.trainer).
"""

from __future__ import annotations

from .objectives import MODEL_INPUTS
from .optim import clip_grad_global_norm

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["pretraining_loop"]


def pretraining_loop(model, batches, optimizer, schedule, steps: int, clip_norm: float | None = 1.0) -> list[float]:
    """Train `model` for `steps` updates on `batches` (an iterator of batch dicts); returns the loss of each step.

    `schedule(step)` is the learning rate of update `step` (a WarmupPolyDecay); `clip_norm` caps the global
    gradient norm (None: no clipping).
    """
    device = next(model.parameters()).device
    batches = iter(batches)
    model.train()  # dropout on
    losses = []
    for step in range(steps):
        batch = {key: value.to(device) for key, value in next(batches).items() if key in MODEL_INPUTS}
        for group in optimizer.param_groups:
            group["lr"] = schedule(step)  # set before the update it drives; 0 at step 0 during warmup
        out = model(**batch)
        # MLM loss per masked token plus the sentence loss per sequence: the Trainer's objective for one micro-batch.
        loss = out.loss
        loss.backward()
        params = [p for p in model.parameters() if p.grad is not None]
        clip_grad_global_norm(params, clip_norm if clip_norm else float("inf"))  # also stops on a diverged loss
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses
