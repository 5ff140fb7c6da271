"""The experiments' data: the tokenized Austen splits, training and held-out batches, and the SOP/NSP pair sets
every model is scored on (the same for every model and seed, so that scores pair up)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from ...text.batches import tokenize_documents
from ...text.corpus import load_corpus
from ...text.instances import SENTENCE_TASKS, build_instances
from ...text.padding import pad_batch
from ...text.tokenizer import Tokenizer
from ...training import run_data
from .budget import Budget


@functools.cache
def token_documents(split: str, limit: int | None = None):
    """The first `limit` chapters (all: None) of an Austen split, tokenized once per process."""
    return tokenize_documents(load_corpus("austen", split)[:limit], Tokenizer.default())


def training_batches(task: str, budget: Budget, seed: int):
    """The training source of one run: the budget's schedule (short sequences first), as the pretraining CLI's."""
    return run_data.training_batches(budget.setup(task, seed), token_documents("train", budget.max_documents),
                                  Tokenizer.default())


HELD_OUT_SEED = 1  # the same masked held-out batches for every model and seed: scores pair up


def held_out_batches(budget: Budget, task: str = "sop", count: int | None = None) -> list[dict]:
    """The budget's held-out batches (`count` of them, default eval_batches): validation chapters, masked once with
    HELD_OUT_SEED whatever the run's seed, with sentence labels (SOP for MLM only)."""
    task = task if SENTENCE_TASKS[task].labelled else "sop"
    return run_data.validation_batches(budget.setup(task, HELD_OUT_SEED), token_documents("validation",
                                    budget.max_documents), Tokenizer.default(), count=count)


@functools.cache
def pair_set(task: str, splits: tuple[str, ...], seq_len: int, limit: int | None, seed: int,
             max_documents: int | None):
    """Unmasked SOP or NSP pairs of some splits as padded tensors, their labels and the instances: all of them in
    order (limit None), or `limit` drawn by `seed`. Cached: every model is scored on the same sets (read only)."""
    instances = [x for split in splits
                 for x in build_instances(token_documents(split, max_documents), task, seq_len, seed=seed)]
    order = np.random.default_rng(seed).permutation(len(instances))[:limit]
    chosen = [instances[i] for i in order] if limit else instances
    inputs = pad_batch({"input_ids": [x.tokens for x in chosen], "token_type_ids": [x.token_type_ids for x in chosen]})
    return inputs, torch.tensor([x.label for x in chosen]), chosen


def sentence_set(task: str, split: str, budget: Budget, limit: int, seed: int):
    """Up to `limit` pairs of one split at the budget's length, drawn by `seed` (pair_set)."""
    return pair_set(task, (split,), budget.setup().seq_len, limit, seed, budget.max_documents)


def held_out_sentences(task: str, budget: Budget):
    """The held-out pairs every model is scored on (the same for every model and seed: scores pair up)."""
    return sentence_set(task, "validation", budget, budget.probe_eval, seed=11)


def probe_sentences(task: str, budget: Budget):
    """The training pairs a linear probe is fitted on."""
    return sentence_set(task, "train", budget, budget.probe_train, seed=12)


def nsp_groups(instances, labels: torch.Tensor, budget: Budget) -> dict[str, torch.Tensor]:
    """Masks over NSP pairs: negatives from another novel, negatives from the same novel, true next sentences."""
    novel = [d.novel for d in load_corpus("austen", "validation")[:budget.max_documents]]
    cross = torch.tensor([x.label == 1 and novel[x.source_a[0]] != novel[x.source_b[0]] for x in instances])
    same = torch.tensor([x.label == 1 and novel[x.source_a[0]] == novel[x.source_b[0]] for x in instances])
    return {"negatives_other_novel": cross, "negatives_same_novel": same, "positives": labels == 0}


