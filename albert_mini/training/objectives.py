"""What the trainer optimises and reports: an objective turns a model output into a loss and named metric sums.

An objective tells the trainer which batch keys go to the model (`inputs`, of which `required` must be present),
the denominators of a micro-batch (a dict of counts, summed over the effective batch before the loss is formed),
how to turn a model output into a loss and a dict of named 0-d float64 sums (`stat_names`), and how summed stats
become metrics. This module holds pretraining's; fine-tuning (albert_mini.tasks.finetuning) plugs its own in.

Pretraining's loss is the sum of the losses in `LOSSES`, each a mean over its predictions in the whole effective
batch. Adding one touches the model (its output gains `<name>_loss_sum`, `<name>_count` and the logits) and this
table: one `Loss` entry saying how a batch counts its predictions and which ones the model got right.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..specials import IGNORE_INDEX

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "labels", "sentence_order_label")


@dataclass(frozen=True)
class Loss:
    """One pretraining loss. The model's output holds its sum (`<name>_loss_sum`, None when the batch has no
    labels for it) and its count (`<name>_count`); `denominator(batch)` counts the same predictions before the
    forward pass, `correct(out, batch)` those the model got right. Its metrics are `<name>_loss` and `<name>_acc`:
    None when nothing was counted if `required`, else left out."""

    denominator: Callable[[dict], torch.Tensor | int]
    correct: Callable[[object, dict], torch.Tensor]
    required: bool = False
    report_count: bool = False  # also report `<name>_count`: how sure the accuracy is


def _masked(batch: dict) -> torch.Tensor:
    return (batch["labels"] != IGNORE_INDEX).sum()


def _mlm_correct(out, batch: dict) -> torch.Tensor:
    targets = out.mlm_labels
    if targets is None:  # a model that does not say its targets: the masked ones, row-major like its mlm_logits
        labels = batch["labels"]
        targets = labels[labels != IGNORE_INDEX]
    # Padding's target IGNORE_INDEX is no token id, so argmax never counts it as correct.
    return (out.mlm_logits.argmax(-1) == targets).sum()


def _sequences(batch: dict) -> int:
    return batch["sentence_order_label"].numel() if "sentence_order_label" in batch else 0


def _sentence_correct(out, batch: dict) -> torch.Tensor:
    return (out.sentence_logits.argmax(-1) == batch["sentence_order_label"].view(-1)).sum()


# The losses of pretraining, in the order they are added up (the order is part of the arithmetic).
LOSSES: dict[str, Loss] = {
    "mlm": Loss(_masked, _mlm_correct, required=True),
    "sentence": Loss(_sequences, _sentence_correct, report_count=True),
}


def stat_names(losses: dict[str, Loss]) -> tuple[str, ...]:
    """The names of the summed stats of `losses`: loss sum, correct predictions and count of each."""
    return tuple(f"{name}_{part}" for name in losses for part in ("loss", "correct", "count"))


def pretraining_objective(out, batch: dict, mlm_denominator, sentence_denominator, mlm_weight: float = 1.0,
                          sentence_weight: float = 1.0):
    """MLM plus sentence loss of a micro-batch over the counts of the whole effective batch, and its named sums."""
    objective = PretrainingObjective(mlm_weight, sentence_weight)
    return objective(out, batch, {"mlm": mlm_denominator, "sentence": sentence_denominator})


def at_least_one(count, like: torch.Tensor):
    """max(count, 1) as a divisor of `like`: a number stays a number; a tensor stays on its device in `like`'s dtype
    (an exact integer there), so dividing by it is the same arithmetic as dividing by the number, without a sync."""
    if isinstance(count, torch.Tensor):
        return count.clamp(min=1).to(like.dtype)
    return max(count, 1.0)


def as_stat(value, device) -> torch.Tensor:
    """A number or a tensor as a 0-d float64 tensor on `device` (the CPU when it has no float64: MPS), made
    without reading it on the host, so a step's metrics cost the GPU no wait."""
    if device.type == "mps":
        device = torch.device("cpu")
    if isinstance(value, torch.Tensor):
        return value.detach().to(device=device, dtype=torch.float64)
    # A number is filled in on the device: copying it there from the host would wait for the GPU as well.
    return torch.full((), value, dtype=torch.float64, device=device)


def _weighted(weight: float, loss: torch.Tensor) -> torch.Tensor:
    return loss if weight == 1.0 else weight * loss  # the paper's weights leave the graph as it was


def metrics_from_sums(sums: dict, losses: dict[str, Loss] | None = None) -> dict:
    """Per-prediction loss and accuracy of each loss from summed stats (numbers), and their total, "loss"."""
    out, parts = {}, []
    for name, spec in (LOSSES if losses is None else losses).items():
        count = sums[f"{name}_count"]
        if count:
            out[f"{name}_loss"] = sums[f"{name}_loss"] / count
            out[f"{name}_acc"] = sums[f"{name}_correct"] / count
            if spec.report_count:
                out[f"{name}_count"] = int(count)  # how sure the accuracy is (sentence_metrics_warning's band)
        elif spec.required:  # None, not NaN: metrics.jsonl stays strict JSON
            out[f"{name}_loss"] = out[f"{name}_acc"] = None
        parts.append(out.get(f"{name}_loss", 0.0))
    out["loss"] = None if None in parts else sum(parts)
    return out


class PretrainingObjective:
    """Pretraining: the losses of `LOSSES` (MLM plus the sentence task), each a mean over the whole effective batch
    and each weighted (a recipe probe's knob; 1 in the paper)."""

    name = "pretrain"  # the progress bar's label
    inputs = MODEL_INPUTS
    required = ("input_ids", "labels")
    progress = {"loss": "loss", "mlm_acc": "mlm_acc", "sentence_acc": "sent_acc"}
    weights = {"mlm": 1.0, "sentence": 1.0}  # the paper's; a subclass need not call __init__
    loss_terms = LOSSES  # the losses summed, by name (a new one: an entry of LOSSES)

    def __init__(self, mlm_weight: float = 1.0, sentence_weight: float = 1.0):
        self.weights = {"mlm": mlm_weight, "sentence": sentence_weight}

    @property
    def stat_names(self) -> tuple[str, ...]:
        return stat_names(self.loss_terms)

    @property
    def denominator_names(self) -> tuple[str, ...]:
        return tuple(self.loss_terms)

    def denominators(self, batch: dict) -> dict[str, torch.Tensor | int]:
        """The predictions of each loss in one micro-batch, counted on the batch's device (reading a count on the
        host would make the host wait for the GPU every step)."""
        return {name: spec.denominator(batch) for name, spec in self.loss_terms.items()}

    def __call__(self, out, batch: dict, denominators: dict) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss to backpropagate and the unweighted sums of each loss (0 for one the model did not compute)."""
        loss, stats, device = None, {}, batch["input_ids"].device
        for name, spec in self.loss_terms.items():
            total = getattr(out, f"{name}_loss_sum", None)
            if total is None:
                if spec.required:
                    raise ValueError(f"the model was called without the labels of its {name} loss; a pretraining "
                                     "batch needs them ('labels' for MLM)")
                stats.update({f"{name}_loss": 0.0, f"{name}_correct": 0, f"{name}_count": 0})
                continue
            part = _weighted(self.weights.get(name, 1.0), total / at_least_one(denominators[name], total))
            loss = part if loss is None else loss + part
            device = total.device
            stats.update({f"{name}_loss": total.detach(), f"{name}_correct": spec.correct(out, batch),
                          f"{name}_count": getattr(out, f"{name}_count")})
        return loss, {key: as_stat(value, device) for key, value in stats.items()}

    def metrics(self, sums: dict) -> dict:
        return metrics_from_sums(sums, self.loss_terms)


def sentence_metrics_warning(metrics: dict, margin: float = 0.05) -> str | None:
    """A message when the sentence loss is below ln 2 - margin while the accuracy is still at chance, else None.

    A two-way head whose loss beats a coin by that much should answer better than a coin. Both at once usually
    means the loss and the accuracy do not look at the same labels (a shuffled or ignored label, a mask bug).
    The chance band is 0.5 +- 2 standard errors of an accuracy at chance over `sentence_count` sequences
    (+-0.05 when the metrics do not say how many).
    """
    loss, acc = metrics.get("sentence_loss"), metrics.get("sentence_acc")
    if loss is None or acc is None:
        return None
    count = metrics.get("sentence_count")
    band = 2 * math.sqrt(0.5 * 0.5 / count) if count else 0.05
    if loss < math.log(2) - margin and abs(acc - 0.5) <= band:
        return (f"sentence loss {loss:.3f} is below ln 2 - {margin} = {math.log(2) - margin:.3f} while the accuracy "
                f"{acc:.3f} is at chance: check that the loss and the accuracy use the same labels")
    return None
