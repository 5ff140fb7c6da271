"""What the trainer optimises and reports: an objective turns a model output into a loss and summed metrics.

An objective tells the trainer which batch keys go to the model (`inputs`, of which `required` must be present),
the denominators of a micro-batch (summed over the effective batch before the loss is formed), how to turn a model
output into a loss and a float64 stats vector of length `n_stats`, and how summed stats become metrics. This
module holds pretraining's; fine-tuning (albert_mini.tasks.finetuning) plugs its own into the same trainer.
"""

from __future__ import annotations

import math

import torch

from ..specials import IGNORE_INDEX

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "labels", "sentence_order_label")


def pretraining_objective(out, batch: dict, mlm_denominator: float, sentence_denominator: float,
                          mlm_weight: float = 1.0, sentence_weight: float = 1.0):
    """Summed MLM and sentence losses of a micro-batch divided by the counts of the whole effective batch.

    The sums come from the model (PreTrainingOutput.mlm_loss_sum, .sentence_loss_sum). Returns the loss to
    backpropagate (each part times its weight: a recipe probe's knob, 1 in the paper) and a float64 vector of
    unweighted sums for the metrics: [mlm loss, mlm correct, masked tokens, sentence loss, sentence correct,
    sequences].
    """
    if out.mlm_loss_sum is None:
        raise ValueError("the model was called without labels; a pretraining batch needs 'labels'")
    targets = out.mlm_labels
    if targets is None:  # a model that does not say its targets: the masked ones, row-major like its mlm_logits
        labels = batch["labels"]
        targets = labels[labels != IGNORE_INDEX]
    loss = _weighted(mlm_weight, out.mlm_loss_sum / at_least_one(mlm_denominator, out.mlm_loss_sum))
    # Padding's target IGNORE_INDEX is no token id, so argmax never counts it as correct.
    stats = [out.mlm_loss_sum.detach(), (out.mlm_logits.argmax(-1) == targets).sum(), out.mlm_count]
    if out.sentence_loss_sum is not None:
        y = batch["sentence_order_label"].view(-1)
        loss = loss + _weighted(sentence_weight, out.sentence_loss_sum / at_least_one(sentence_denominator,
                                                                                       out.sentence_loss_sum))
        stats += [out.sentence_loss_sum.detach(), (out.sentence_logits.argmax(-1) == y).sum(), out.sentence_count]
    else:
        stats += [0.0, 0, 0]
    return loss, stats_vector(stats, out.mlm_loss_sum.device)


def at_least_one(count, like: torch.Tensor):
    """max(count, 1) as a divisor of `like`: a number stays a number; a tensor stays on its device in `like`'s dtype
    (an exact integer there), so dividing by it is the same arithmetic as dividing by the number, without a sync."""
    if isinstance(count, torch.Tensor):
        return count.clamp(min=1).to(like.dtype)
    return max(count, 1.0)


def stats_vector(values, device) -> torch.Tensor:
    """Numbers and 0-d tensors as one float64 vector on `device` (the CPU when it has no float64: MPS), built
    without reading any of them on the host, so a step's metrics cost the GPU no wait."""
    if device.type == "mps":
        device = torch.device("cpu")
    # A number is filled in on the device: copying it there from the host would wait for the GPU as well.
    return torch.stack([v.detach().to(device=device, dtype=torch.float64) if isinstance(v, torch.Tensor)
                        else torch.full((), v, dtype=torch.float64, device=device) for v in values])


def _weighted(weight: float, loss: torch.Tensor) -> torch.Tensor:
    return loss if weight == 1.0 else weight * loss  # the paper's weights leave the graph as it was


def metrics_from_sums(sums: torch.Tensor) -> dict:
    """Per-token MLM and per-sequence sentence loss and accuracy from a summed stats vector."""
    mlm_loss, mlm_correct, masked, s_loss, s_correct, sequences = sums[:6].tolist()
    # None, not NaN, when nothing was masked: metrics.jsonl stays strict JSON.
    out = {"mlm_loss": mlm_loss / masked if masked else None, "mlm_acc": mlm_correct / masked if masked else None}
    if sequences:
        out["sentence_loss"], out["sentence_acc"] = s_loss / sequences, s_correct / sequences
        out["sentence_count"] = int(sequences)  # how sure the accuracy is (sentence_metrics_warning's band)
    parts = [out["mlm_loss"], out.get("sentence_loss", 0.0)]
    out["loss"] = None if None in parts else sum(parts)
    return out


class PretrainingObjective:
    """Pretraining: MLM plus the sentence task, each a mean over the whole effective batch (and each weighted)."""

    name = "pretrain"  # the progress bar's label
    inputs = MODEL_INPUTS
    required = ("input_ids", "labels")
    n_stats = 6
    n_denominators = 2
    progress = {"loss": "loss", "mlm_acc": "mlm_acc", "sentence_acc": "sent_acc"}
    mlm_weight = sentence_weight = 1.0  # the paper's; a subclass need not call __init__

    def __init__(self, mlm_weight: float = 1.0, sentence_weight: float = 1.0):
        self.mlm_weight, self.sentence_weight = mlm_weight, sentence_weight

    def denominators(self, batch: dict) -> torch.Tensor:
        """Masked tokens and labelled sequences of one micro-batch, a float64 vector on the batch's device (counted
        there: reading the count on the host would make the host wait for the GPU every step)."""
        labels = batch["labels"]
        sequences = batch["sentence_order_label"].numel() if "sentence_order_label" in batch else 0
        return stats_vector([(labels != IGNORE_INDEX).sum(), sequences], labels.device)

    def __call__(self, out, batch: dict, denominators) -> tuple[torch.Tensor, torch.Tensor]:
        return pretraining_objective(out, batch, *denominators, self.mlm_weight, self.sentence_weight)

    def metrics(self, sums: torch.Tensor) -> dict:
        return metrics_from_sums(sums)


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
