"""Held-out evaluation: the objective's metrics over validation batches, summed over ranks; and how a batch goes
to the model's device."""

from __future__ import annotations

import torch

from .distributed import DistInfo, all_reduce_sum
from .objectives import PretrainingObjective


def to_device(batch: dict, device: torch.device, objective=None) -> dict:
    objective = objective or PretrainingObjective()
    missing = [k for k in objective.required if k not in batch]
    if missing:
        raise KeyError(f"batch lacks {missing}; a batch source must yield dicts with keys {objective.inputs}")
    if batch["input_ids"].shape[0] == 0:  # its loss would be 0 / 0
        raise ValueError("a batch holds no sequence (input_ids of shape "
                         f"{tuple(batch['input_ids'].shape)}); a batch source must yield at least one")
    # Not blocking: from pinned memory (LoadedBatches on CUDA) the copy overlaps the work already queued.
    return {k: batch[k].to(device, non_blocking=True) for k in objective.inputs if k in batch}


def reduce_stats(sums: dict, dist: DistInfo) -> dict:
    """Named sums summed over ranks as host numbers: stacked once, one all-reduce, one read."""
    stacked = torch.stack([sums[k].to(dist.reduce_device) for k in sums])
    return dict(zip(sums, all_reduce_sum(stacked, dist).cpu().tolist()))


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches, dist: DistInfo | None = None, max_batches: int | None = None,
             bf16: bool = False, objective=None) -> dict:
    """The objective's metrics on validation batches, summed over ranks (pretraining: MLM and sentence accuracy)."""
    if iter(batches) is batches:
        raise TypeError("validation batches must be re-iterable (a list, or a source whose __iter__ starts over); "
                        "wrap an iterator with list(...)")
    dist, objective = dist or DistInfo(), objective or PretrainingObjective()
    device, was_training = next(model.parameters()).device, model.training
    model.eval()
    sums = {k: torch.zeros((), dtype=torch.float64) for k in objective.stat_names}
    try:
        for i, batch in enumerate(batches):
            if max_batches is not None and i >= max_batches:
                break
            batch = to_device(batch, device, objective)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                out = model(**batch)
            for k, v in objective(out, batch, dict.fromkeys(objective.denominator_names, 1.0))[1].items():
                sums[k] += v.detach().cpu()
    finally:
        model.train(was_training)
    return objective.metrics(reduce_stats(sums, dist))
