"""What every experiment shares: the budget, the tokenized Austen splits, held-out batches, cached pretraining,
sentence-task accuracy (own head or a linear probe), and the provenance written with each result.

Every experiment pretrains the classroom model (or a variant) on the Austen training chapters with the one
recipe (albert_mini.training.recipe) and a fixed step budget, and evaluates on held-out chapters. Models shared
between experiments (e.g. albert-mini with SOP) are trained once per process.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...model.albert import AlbertForPreTraining
from ...model.config import AlbertConfig, embedding_variant
from ...model.counting import count_parameters
from ...paths import REPO_ROOT
from ...settings import fast_mode
from ...text.batches import PretrainingBatches, build_pretraining_dataset, tokenize_documents
from ...text.corpus import load_corpus
from ...text.instances import SENTENCE_TASKS, build_instances
from ...text.padding import pad_batch
from ...text.tokenizer import Tokenizer
from ...training.recipe import build_pretraining_model
from ...training.trainer import TrainConfig, train
from ..probes import linear_probe, pooled_outputs

COMMAND = "python -m albert_mini.study.experiments"


@dataclass(frozen=True)
class Budget:
    """Everything that decides a pretraining run besides the model and the task."""

    steps: int
    batch_size: int = 32
    seq_len: int = 128
    lr: float = 5e-3
    warmup: int = 50
    optimizer: str = "lamb"
    eval_batches: int = 16  # held-out batches of 32 sequences for MLM accuracy
    probe_train: int = 2048  # training-split instances a linear probe is fitted on
    probe_eval: int = 1024  # held-out instances a sentence task is scored on
    probe_steps: int = 300  # full-batch Adam steps of a linear probe
    seed: int = 0
    max_documents: int | None = None  # use only the first chapters of each split (fast mode)


FULL = Budget(steps=200)
FAST = Budget(steps=2, batch_size=4, seq_len=64, warmup=1, eval_batches=1, probe_train=32, probe_eval=32,
              probe_steps=5, max_documents=6)


def current_budget() -> Budget:
    """FAST under ALBERT_MINI_FAST=1, FULL otherwise."""
    return FAST if fast_mode() else FULL


def results_dir() -> Path:
    """data/results in full mode; a git-ignored cache folder in fast mode."""
    return REPO_ROOT / ("cache/results-fast" if fast_mode() else "data/results")


def mini(**changes) -> AlbertConfig:
    """The classroom model, albert-mini, with some fields changed."""
    return AlbertConfig.from_preset("albert-mini", **changes)


def variant(sharing: str, embedding_size: int) -> AlbertConfig:
    """albert-mini with another E and sharing; with E = H there is no projection (so "none" at E = H is bert-mini)."""
    return embedding_variant(mini(), embedding_size, sharing).replace(
        embedding_projection=embedding_size != mini().hidden_size)


# ---------------------------------------------------------------------------------------------- data
@functools.lru_cache(maxsize=None)
def token_documents(split: str, limit: int | None = None):
    """The first `limit` chapters (all: None) of an Austen split, tokenized once per process."""
    return tokenize_documents(load_corpus("austen", split)[:limit], Tokenizer.default())


def pretraining_batches(task: str, split: str, budget: Budget, dynamic: bool, seed: int) -> PretrainingBatches:
    """Masked batches of a split for `task` at the budget's length and batch size."""
    dataset = build_pretraining_dataset(token_documents(split, budget.max_documents), Tokenizer.default(), task,
                                        budget.seq_len, seed=seed, dynamic=dynamic)
    return PretrainingBatches(dataset, budget.batch_size)


def held_out_batches(budget: Budget, task: str = "sop") -> list[dict]:
    """The budget's held-out batches: validation chapters, masked once, with sentence labels (SOP for MLM only)."""
    task = task if SENTENCE_TASKS[task].labelled else "sop"
    batches = pretraining_batches(task, "validation", budget, dynamic=False, seed=budget.seed + 1)
    return batches.take(budget.eval_batches)


# ---------------------------------------------------------------------------------------------- pretraining
_trained: dict = {}


def pretrain(config: AlbertConfig, task: str, budget: Budget) -> tuple[AlbertForPreTraining, dict]:
    """Pretrain `config` on the Austen training chapters with `task` beside MLM; cached per process."""
    key = (config.to_json(), task, budget)
    if key not in _trained:
        model = build_pretraining_model(config, task, token_documents("train", budget.max_documents), seed=budget.seed)
        start = time.perf_counter()
        result = train(model, pretraining_batches(task, "train", budget, dynamic=True, seed=budget.seed),
                       TrainConfig(max_steps=budget.steps, log_every=max(1, budget.steps // 20), progress=False),
                       optimizer=budget.optimizer, lr=budget.lr, warmup_steps=budget.warmup,
                       val_batches=held_out_batches(budget, task))
        record = {"seconds": time.perf_counter() - start, "steps": result.step, "eval": result.eval,
                  "curve": [{k: h.get(k) for k in ("step", "loss", "mlm_acc", "sentence_acc")}
                            for h in result.history if h["type"] == "train"]}
        _trained[key] = (model.eval(), record)
    return _trained[key]


def mlm_accuracy(record: dict) -> float | None:
    """Held-out MLM accuracy at the end of a pretraining run (None when it was not evaluated)."""
    return record["eval"]["mlm_acc"] if record["eval"] else None


# ---------------------------------------------------------------------------------------------- sentence tasks
@functools.lru_cache(maxsize=None)
def sentence_set(task: str, split: str, budget: Budget, limit: int, seed: int):
    """Up to `limit` unmasked instances of an SOP or NSP split as padded tensors, their labels and the instances.

    Cached: every model of an experiment is scored on the same sets, so they are built once (read only)."""
    instances = build_instances(token_documents(split, budget.max_documents), task, budget.seq_len, seed=seed)
    order = np.random.default_rng(seed).permutation(len(instances))[:limit]
    chosen = [instances[i] for i in order]
    inputs = pad_batch({"input_ids": [x.tokens for x in chosen], "token_type_ids": [x.token_type_ids for x in chosen]})
    return inputs, torch.tensor([x.label for x in chosen]), chosen


def sentence_accuracy(model: AlbertForPreTraining, task: str, trained_task: str, budget: Budget) -> dict:
    """Held-out accuracy on SOP or NSP: the model's own head if it was trained on `task`, else a linear probe."""
    test_inputs, test_y, test_instances = sentence_set(task, "validation", budget, budget.probe_eval, seed=11)
    pooled, logits = pooled_outputs(model, test_inputs)
    if task == trained_task:
        predictions, method = logits.argmax(-1), "trained head"
    else:
        train_inputs, train_y, _ = sentence_set(task, "train", budget, budget.probe_train, seed=12)
        train_pooled, _ = pooled_outputs(model, train_inputs)
        predictions = linear_probe(train_pooled, train_y, pooled, budget.probe_steps, seed=budget.seed)
        method = f"linear probe on frozen pooled output ({budget.probe_train} examples, {budget.probe_steps} steps)"
    correct = (predictions == test_y).float()
    result = {"accuracy": float(correct.mean()), "examples": len(test_y), "method": method}
    if task == "nsp":  # negatives whose B comes from another novel vs from the same novel
        novel = [d.novel for d in load_corpus("austen", "validation")[:budget.max_documents]]
        cross = torch.tensor([x.label == 1 and novel[x.source_a[0]] != novel[x.source_b[0]] for x in test_instances])
        same = torch.tensor([x.label == 1 and novel[x.source_a[0]] == novel[x.source_b[0]] for x in test_instances])
        for name, rows in (("negatives_other_novel", cross), ("negatives_same_novel", same),
                           ("positives", test_y == 0)):
            result[name] = {"accuracy": float(correct[rows].mean()) if rows.any() else None,
                            "examples": int(rows.sum())}
    return result


def score_variant(config: AlbertConfig, budget: Budget) -> dict:
    """Pretrain a variant with SOP and report its parameters, held-out MLM and SOP accuracy and its training time."""
    model, record = pretrain(config, "sop", budget)
    return {"params": count_parameters(config), "mlm_acc": mlm_accuracy(record),
            "sop": sentence_accuracy(model, "sop", "sop", budget)["accuracy"], "train_seconds": record["seconds"]}


# ---------------------------------------------------------------------------------------------- results
def git_revision() -> str:
    """The checkout's short commit hash, or "unknown" outside a git checkout."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=REPO_ROOT).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_result(name: str, payload: dict, budget: Budget, out_dir: Path, seconds: float) -> Path:
    """<out_dir>/<name>.json: the numbers and everything needed to reproduce them."""
    meta = {"experiment": name, "command": f"{COMMAND} {name}", "fast_mode": budget == FAST,
            "budget": dataclasses.asdict(budget), "git_revision": git_revision(), "torch": torch.__version__,
            "python": platform.python_version(), "wall_seconds": round(seconds, 1),
            "threads": torch.get_num_threads()}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps({"meta": meta, **payload}, indent=1, default=float) + "\n")
    return path


def setting(result: dict) -> str:
    """The budget a result was made with, for figure titles."""
    budget = result["meta"]["budget"]
    return (f"albert-mini family, {budget['steps']} steps x {budget['batch_size']} x {budget['seq_len']} tokens, "
            f"seed {budget['seed']}")


def pct(value) -> str:
    """An accuracy in percent with one decimal, or "-" when there is none."""
    return "-" if value is None else f"{100 * value:.1f}"


def params_figure(result: dict, title: str):
    """Three bar panels per model variant: parameters, held-out MLM accuracy, held-out SOP accuracy."""
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, (ax_p, ax_m, ax_s) = plt.subplots(1, 3, figsize=(12, 3.6))
    labels = list(rows)
    for ax, key, xlabel in ((ax_p, "params", "parameters (millions)"), (ax_m, "mlm_acc", "held-out MLM accuracy (%)"),
                            (ax_s, "sop", "held-out SOP accuracy (%)")):
        scale = 1e-6 if key == "params" else 100
        ax.barh(labels, [scale * (rows[k][key] or 0) for k in labels])
        ax.set(xlabel=xlabel)
        ax.invert_yaxis()
    for ax in (ax_m, ax_s):
        ax.set_yticklabels([])
    fig.suptitle(f"{title}: {setting(result)}")
    fig.tight_layout()
    return fig


def params_table(result: dict, title: str, paper: dict, paper_key) -> str:
    """Markdown rows of model variants (params, MLM and SOP accuracy) beside the paper row `paper_key(row)` picks."""
    out = [f"### {title}", "", "| model | params | MLM acc | SOP acc | paper row: params, Avg |",
           "|---|---|---|---|---|"]
    for label, row in result["rows"].items():
        ref = paper.get(paper_key(row))
        ref_text = f"{ref[0]}M, {ref[1]}" if ref else "-"
        out.append(f"| {label} | {row['params'] / 1e6:.2f}M | {pct(row['mlm_acc'])} | {pct(row['sop'])} | {ref_text} |")
    return "\n".join(out)
