"""A positive control with a real, weak signal: the sentence path trained on SOP pairs built the reference way.

The reference recipe truncates a pair after deciding its order, so segment lengths and sentence-final pieces say
something about the label (chapter 5: five surface features and a logistic regression reach about 58% on held-out
pairs, where our own pairs give 50%). A network trained on such pairs should find the same cue: if its held-out
accuracy rises from the constant answer towards the surface probe's, the sentence path learns a signal that is
there, and a flat SOP curve on our cue-free pairs is about the task, not the wiring.

    albert-mini leak-control --steps 300 --every 50 --out data/results/leak_control.json   # the shipped record
"""

from __future__ import annotations

import random
import time

import numpy as np
import torch

from ...errors import UsageError
from ...study.controls import control_step, sentence_accuracy, sentence_logits
from ...study.leak_probe import (
    fit_logistic_regression,
    reference_style_instances,
    sentence_end_pieces,
    surface_features,
)
from ...study.stats import compare_paired, wilson_interval
from ...tasks.scoring import bits
from ...text.batches import tokenize_documents
from ...text.corpus import load_corpus
from ...text.padding import pad_batch
from ...text.tokenizer import Tokenizer
from ...training.run import build_optimization
from ..experiments.provenance import cpu_model, git_revision
from .recipe_space import Recipe, build_model

HELD_OUT_SPLITS = ("validation", "test")


def split_documents(splits, max_documents: int | None = None):
    """The chapters of the named Austen splits (the first `max_documents` of each), tokenized."""
    docs = []
    for split in splits:
        docs += load_corpus("austen", split)[:max_documents]
    return tokenize_documents(docs, Tokenizer.default())


def pair_batches(instances, batch_size: int, seed: int) -> list[dict]:
    """Padded sentence-pair batches (no masking: the sentence loss alone is trained), in a seeded order."""
    order = batch_order(len(instances), batch_size, seed)
    batches = []
    for start in range(0, len(order), batch_size):
        rows = [instances[i] for i in order[start:start + batch_size]]
        batch = pad_batch({"input_ids": [r.tokens.tolist() for r in rows],
                           "token_type_ids": [r.token_type_ids.tolist() for r in rows]})
        batch["sentence_order_label"] = torch.tensor([r.label for r in rows])
        batches.append(batch)
    return batches


def run_leak_control(recipe: Recipe, steps: int, every: int = 50, max_documents: int | None = None,
                     say=print, command: str | None = None) -> dict:
    """Train the sentence path on reference-style SOP pairs of the training chapters (a new draw every pass);
    score it, the surface probe and the constant answer on reference-style pairs of the held-out chapters. The
    record names `command`, the command line that ran it, and the git revision."""
    if steps < 1 or every < 1:
        raise UsageError(f"--steps and --every must be >= 1, got {steps} and {every}")
    train_docs = split_documents(("train",), max_documents)
    held_docs = split_documents(HELD_OUT_SPLITS, max_documents)
    held = reference_style_instances(held_docs, recipe.base.seq_len, seed=0)
    labels = np.array([i.label for i in held])
    final, closing = sentence_end_pieces(Tokenizer.default())
    # The surface probe: five features, fitted on one draw of training pairs, scored on the held-out pairs.
    fit_on = reference_style_instances(train_docs, recipe.base.seq_len, seed=recipe.base.seed)
    predict = fit_logistic_regression(surface_features(fit_on, final, closing), np.array([i.label for i in fit_on]))
    surface = predict(surface_features(held, final, closing)) == labels  # (N,) bool
    constant = labels == int(labels.mean() >= 0.5)  # the majority label for every pair

    torch.manual_seed(recipe.base.seed)
    model = build_model(recipe.replace(output_bias="zeros"))  # the MLM head is not used
    optimizer, schedule = build_optimization(recipe.setup(steps), model)
    val = pair_batches(held, 64, seed=0)
    order = held_out_order(len(held), 64)
    queue, draw, log, start = [], 0, [], time.perf_counter()
    model.train()
    for step in range(steps):
        if not queue:  # a fresh reference-style draw of the training chapters for every pass
            draw += 1
            drawn = reference_style_instances(train_docs, recipe.base.seq_len, seed=recipe.base.seed + draw)
            queue = pair_batches(drawn, recipe.base.batch_size, seed=draw)
        lr = schedule.apply(optimizer, step)
        loss, acc, _ = control_step(model, optimizer, queue.pop(0), recipe.base.clip_norm)
        row = {"step": step + 1, "loss": loss, "acc": acc, "lr": lr}
        if (step + 1) % every == 0 or step + 1 == steps:
            row["held_out_loss"], row["held_out_acc"] = sentence_accuracy(model, val)
            say(f"step {step + 1}: training loss {loss:.4f}, held-out accuracy {row['held_out_acc']:.3f}")
        log.append(row)
    network = held_out_correct(model, val)  # (M,) bool, the pairs in `order`
    # Paired comparisons on the pairs the network scored (all but the last partial batch): the same pairs, so
    # McNemar on the pairs where two answers differ, and a paired bootstrap of the accuracy difference.
    versus = {name: compare_paired([bits(network)], [bits(other[order])])
              for name, other in (("constant_answer", constant), ("surface_probe", surface))}

    def score(right: np.ndarray) -> dict:
        count = int(right.sum())
        return {"correct": count, "total": len(right), "accuracy": count / len(right),
                "interval": wilson_interval(count, len(right))}

    return {"recipe": recipe.record(), "steps": steps, "passes": draw,
            "seconds": time.perf_counter() - start,
            "cpu": cpu_model(), "threads": torch.get_num_threads(), "command": command, "git_revision": git_revision(),
            "held_out_pairs": len(held), "label_1_share": float(labels.mean()),
            "constant_answer": score(constant), "surface_probe": score(surface), "network": score(network),
            "network_vs": versus, "log": log}


def batch_order(pairs: int, batch_size: int, seed: int) -> list[int]:
    """The indices pair_batches(…, batch_size, seed) puts in its batches, in order (the last partial batch dropped)."""
    order = list(range(pairs))
    random.Random(seed).shuffle(order)
    return order[:pairs // batch_size * batch_size]


def held_out_order(pairs: int, batch_size: int) -> np.ndarray:
    """Indices of the held-out pairs in the order pair_batches(…, batch_size, seed=0) scores them."""
    return np.array(batch_order(pairs, batch_size, seed=0))


@torch.no_grad()
def held_out_correct(model, batches: list[dict]) -> np.ndarray:
    """Per-pair correctness of the sentence head over `batches`, in order, in eval mode."""
    model.eval()
    right = [(sentence_logits(model, b).argmax(-1) == b["sentence_order_label"]).numpy() for b in batches]
    model.train()
    return np.concatenate(right)

