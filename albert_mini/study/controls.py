"""Positive controls of the sentence path: the sentence loss alone (no MLM), on a task the network can certainly do.

A flat SOP curve has two readings: the task is too hard at this scale, or something between the labels and the loss
is broken. A control separates them. Rule "sop" revisits a fixed small set of real SOP pairs, which a working path
memorises; rule "longer" labels fresh pairs "segment A has more tokens than segment B", which any encoder reads from
the segment ids. `train_sentence_path` is the loop of both: the recipe search's controls
(albert_mini.harness.research.recipe_search) and chapter 11's live control train with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F

from ..training.optim import clip_grad_global_norm
from ..training.run import build_optimization
from ..training.setup import PretrainingSetup
from .collapse import RULES, diagnose, relabel

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["train_sentence_path"]


def sentence_logits(model, batch: dict) -> torch.Tensor:
    """The sentence head's logits (B, 2), without the MLM head (which would score all B x T positions)."""
    pooled = model.albert(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]).pooler_output
    return model.sop_classifier(pooled)


@torch.no_grad()
def sentence_accuracy(model, batches: list[dict]) -> tuple[float, float]:
    """(mean sentence loss, accuracy) of the sentence head on `batches`, in eval mode."""
    was = model.training
    model.eval()
    loss = correct = count = 0.0
    for b in batches:
        logits = sentence_logits(model, b)  # (B, 2)
        loss += float(F.cross_entropy(logits, b["sentence_order_label"], reduction="sum"))
        correct += float((logits.argmax(-1) == b["sentence_order_label"]).sum())
        count += len(logits)
    model.train(was)
    return loss / count, correct / count


def control_step(model, optimizer, batch: dict, clip_norm: float) -> tuple[float, float, float]:
    """One update on the sentence loss alone; (loss, training accuracy of the batch, gradient norm before clipping)."""
    logits = sentence_logits(model, batch)  # (B, 2)
    loss = F.cross_entropy(logits, batch["sentence_order_label"])
    loss.backward()
    norm = clip_grad_global_norm([p for p in model.parameters() if p.grad is not None], clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    acc = float((logits.argmax(-1) == batch["sentence_order_label"]).float().mean())
    return float(loss.detach()), acc, norm


def train_sentence_path(model, setup: PretrainingSetup, held_out: list[dict], batches: Iterator[dict] | None = None,
                        fixed: list[dict] | None = None, rule: str = "sop", every: int = 10,
                        say: Callable[[str], None] | None = None, name: str = "control") -> list[dict]:
    """Train `model`'s sentence path alone for setup.steps updates, with the setup's optimizer, schedule and
    clipping, on fresh `batches` or, given `fixed`, on those batches revisited in turn; returns the log.

    rule "sop" keeps the batches' SOP labels; "longer" relabels every batch (held-out ones too) "segment A is
    longer than B". Each log row holds the update's learning rate, loss, batch accuracy and gradient norm; the first,
    every `every`-th and last also the collapse diagnostics (study.collapse.diagnose), the held-out loss and accuracy
    and, with `fixed`, those on the fixed batches. `say` gets each of those rows as a line of JSON.
    """
    if rule not in RULES + ("sop",):
        raise ValueError(f"rule must be one of {', '.join(RULES + ('sop',))}, got {rule!r}")
    if (batches is None) == (fixed is None):
        raise ValueError("give the training pairs as either `batches` (fresh pairs) or `fixed` (revisited)")
    if rule != "sop":
        held_out = [relabel(b, rule) for b in held_out]
        fixed = [relabel(b, rule) for b in fixed] if fixed else None
    optimizer, schedule = build_optimization(setup, model)
    log = []
    model.train()
    for step in range(setup.steps):
        batch = fixed[step % len(fixed)] if fixed else next(batches)
        if rule != "sop" and not fixed:
            batch = relabel(batch, rule)
        lr = schedule.apply(optimizer, step)
        loss, acc, norm = control_step(model, optimizer, batch, setup.clip_norm)
        row = {"step": step + 1, "lr": lr, "loss": loss, "acc": acc, "grad_norm": norm}
        if (step + 1) % every == 0 or step == 0 or step + 1 == setup.steps:
            row["diag"] = diagnose(model, held_out[0])
            row["held_out_loss"], row["held_out_acc"] = sentence_accuracy(model, held_out)
            if fixed:
                row["fit_loss"], row["fit_acc"] = sentence_accuracy(model, fixed)
            if say is not None:
                say(json.dumps({"control": name, "step": step + 1, "loss": round(loss, 4), "acc": round(acc, 3),
                                "held_out": round(row["held_out_acc"], 3),
                                "cos": round(row["diag"]["position_cosine"][-1], 3),
                                "qk_std": round(row["diag"]["qk_logit_std"], 3)}))
        log.append(row)
    return log
