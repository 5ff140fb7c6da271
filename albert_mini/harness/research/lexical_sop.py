"""A no-network SOP baseline: logistic regression on which tokens open and close each segment.

If the order of two segments could be read off their edges (A tends to end a sentence, B tends to begin one;
certain words open a paragraph), a linear model on position-specific bags of the first and last k tokens of A
and of B would beat chance. Each (slot, token) pair is one binary feature: slots are A's first k, A's last k,
B's first k, B's last k (k = 0: two slots, all of A and all of B). Held-out accuracy near 50% means the pairs
carry no such lexical cue, so a model that beats chance must have learned something about order itself.

    albert-mini lexical-sop --out data/results/lexical_sop.json
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from ...study.stats import wilson_interval
from ...text.instances import Instance, build_instances
from ..experiments.provenance import cpu_model, git_revision
from .recipe_space import documents

EDGES = (1, 3, 0)  # k = first/last 1, first/last 3, whole segments


def edge_bags(instances: Sequence[Instance], k: int, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(feature ids, offsets, feature count) for torch's EmbeddingBag: each instance's set of (slot, token) ids."""
    ids, offsets = [], []
    for x in instances:
        a, b = x.segments()
        slots = [a, b] if k == 0 else [a[:k], a[-k:], b[:k], b[-k:]]
        offsets.append(len(ids))
        for slot, segment in enumerate(slots):
            ids.extend(slot * vocab_size + t for t in sorted(set(segment.tolist())))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(offsets, dtype=torch.long), len(slots) * vocab_size


def fit_lexical(train: Sequence[Instance], test: Sequence[Instance], k: int, vocab_size: int, l2: float = 1e-5,
                steps: int = 400, seed: int = 0) -> dict:
    """Fit the bag-of-edges logistic regression on `train` (full-batch Adam); training and held-out accuracy."""
    torch.manual_seed(seed)
    train_ids, train_offsets, n = edge_bags(train, k, vocab_size)
    test_ids, test_offsets, _ = edge_bags(test, k, vocab_size)
    y_train = torch.tensor([x.label for x in train], dtype=torch.float32)
    y_test = torch.tensor([x.label for x in test], dtype=torch.float32)
    weights = torch.nn.EmbeddingBag(n, 1, mode="sum")
    torch.nn.init.zeros_(weights.weight)
    bias = torch.zeros(1, requires_grad=True)
    opt = torch.optim.Adam([weights.weight, bias], lr=0.05)
    for _ in range(steps):
        logits = weights(train_ids, train_offsets).squeeze(1) + bias  # (N,)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y_train) + l2 * weights.weight.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        train_acc = ((weights(train_ids, train_offsets).squeeze(1) + bias > 0).float() == y_train).float().mean()
        test_acc = ((weights(test_ids, test_offsets).squeeze(1) + bias > 0).float() == y_test).float().mean()
    return {"k": k, "l2": l2, "steps": steps, "train_pairs": len(train), "held_out_pairs": len(test),
            "train_acc": float(train_acc), "held_out_acc": float(test_acc)}


def sop_pairs(seq_len: int, train_epochs: int = 4) -> tuple[list[Instance], list[Instance]]:
    """Training pairs (several instance draws of the training chapters) and held-out pairs (validation + test)."""
    train = [x for e in range(train_epochs) for x in build_instances(documents("train"), "sop", seq_len, seed=100 + e)]
    test = [x for split in ("validation", "test") for x in build_instances(documents(split), "sop", seq_len, seed=1)]
    return train, test


def lexical_baselines(seq_lens=(64, 128), edges=EDGES, l2: float = 1e-5, steps: int = 400,
                      vocab_size: int = 8000) -> dict:
    """Every (sequence length, k) baseline, with the held-out 95% interval."""
    rows, start = [], time.perf_counter()
    for seq_len in seq_lens:
        train, test = sop_pairs(seq_len)
        for k in edges:
            row = {"seq_len": seq_len, **fit_lexical(train, test, k, vocab_size, l2, steps)}
            correct = round(row["held_out_acc"] * row["held_out_pairs"])
            row["held_out_interval"] = wilson_interval(correct, row["held_out_pairs"])
            rows.append(row)
    return {"about": "Logistic regression on position-specific bags of the first/last k tokens of segments A and B "
                     "(k=0: whole segments); training chapters (4 instance draws) -> validation + test chapters",
            "command": "albert-mini lexical-sop", "machine": cpu_model(),
            "git_revision": git_revision(),
            "wall_seconds": round(time.perf_counter() - start, 1), "threads": torch.get_num_threads(), "rows": rows}

