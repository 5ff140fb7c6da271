"""The paper's findings at mini scale: one function per experiment, fast and full settings, one command.

    python -m albert_mini.experiments all               # what `make experiments` runs (full settings)
    python -m albert_mini.experiments sentence_task     # one of: sentence_task sharing embedding_size
                                                        #         smoothness throughput memory
    ALBERT_MINI_FAST=1 python -m albert_mini.experiments all   # seconds, for tests; writes to cache/

Every experiment pretrains the classroom model (or a variant) on the Austen training chapters with the same
recipe and a fixed step budget, evaluates on held-out chapters, and writes `data/results/<name>.json` holding the
numbers with the command, git revision, seed and budget that produced them, plus a figure in `figures/`.
Models shared between experiments (e.g. albert-mini with SOP) are trained once per process.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import cli
from .analysis import Smoothness, layer_smoothness, plot_smoothness
from .book import save_figure
from .config import AlbertConfig
from .counting import count_parameters
from .model import AlbertForPreTraining
from .paths import PRETRAINED_MODEL, REPO_ROOT
from .settings import fast_mode

EXPERIMENTS = ("sentence_task", "sharing", "embedding_size", "smoothness", "throughput", "memory", "finetune")
PRETRAINED_DIR = PRETRAINED_MODEL


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


# ---------------------------------------------------------------------------------------------- data
class _Data:
    """Tokenized Austen splits, built once per process."""

    _cache: dict = {}

    @classmethod
    def documents(cls, split: str, limit: int | None = None):
        if (split, limit) not in cls._cache:
            from .corpus import load_corpus
            from .pretraining_data import tokenize_documents
            from .tokenizer import Tokenizer

            cls._cache[split, limit] = tokenize_documents(load_corpus("austen", split)[:limit], Tokenizer.default())
        return cls._cache[split, limit]


def _batches(task: str, split: str, budget: Budget, dynamic: bool, seed: int):
    from .pretraining_data import PretrainingBatches, build_pretraining_dataset
    from .tokenizer import Tokenizer

    dataset = build_pretraining_dataset(_Data.documents(split, budget.max_documents), Tokenizer.default(), task, budget.seq_len,
                                        seed=seed, dynamic=dynamic)
    return PretrainingBatches(dataset, budget.batch_size)


# ---------------------------------------------------------------------------------------------- training
_trained: dict = {}


def pretrain(config: AlbertConfig, task: str, budget: Budget) -> tuple[AlbertForPreTraining, dict]:
    """Pretrain `config` on the Austen training chapters with `task` beside MLM; cached per process."""
    from .trainer import TrainConfig, train

    key = (config.to_json(), task, budget)
    if key in _trained:
        return _trained[key]
    from .pretraining_data import unigram_log_prior

    torch.manual_seed(budget.seed)
    model = AlbertForPreTraining(config)
    # The CLI's default: the MLM output bias starts at the training text's log unigram frequencies.
    model.init_output_bias(unigram_log_prior(_Data.documents("train", budget.max_documents), config.vocab_size))
    if task == "none":  # nothing trains the pooler and the sentence head: leave them as initialised
        model.albert.pooler.requires_grad_(False)
        model.sop_classifier.requires_grad_(False)
    val = _batches(task if task != "none" else "sop", "validation", budget, dynamic=False, seed=budget.seed + 1)
    start = time.perf_counter()
    result = train(model, _batches(task, "train", budget, dynamic=True, seed=budget.seed),
                   TrainConfig(max_steps=budget.steps, log_every=max(1, budget.steps // 20), progress=False),
                   optimizer=budget.optimizer, lr=budget.lr, warmup_steps=budget.warmup,
                   val_batches=val.take(budget.eval_batches))
    record = {"seconds": time.perf_counter() - start, "steps": result.step, "eval": result.eval,
              "curve": [{k: h.get(k) for k in ("step", "loss", "mlm_acc", "sentence_acc")}
                        for h in result.history if h["type"] == "train"]}
    _trained[key] = (model.eval(), record)
    return _trained[key]


# ---------------------------------------------------------------------------------------------- evaluation
@functools.lru_cache(maxsize=None)
def _sentence_set(task: str, split: str, budget: Budget, limit: int, seed: int):
    """Up to `limit` unmasked instances of an SOP or NSP split as padded tensors, with their sources.

    Cached: every model of an experiment is scored on the same sets, so they are built once (read only)."""
    from .instances import build_instances

    docs = _Data.documents(split, budget.max_documents)
    instances = build_instances(docs, task, budget.seq_len, seed=seed)
    order = np.random.default_rng(seed).permutation(len(instances))[:limit]
    chosen = [instances[i] for i in order]
    T = max(len(x.tokens) for x in chosen)
    ids = torch.zeros(len(chosen), T, dtype=torch.long)
    types = torch.zeros_like(ids)
    for row, inst in enumerate(chosen):
        ids[row, :len(inst.tokens)] = torch.from_numpy(inst.tokens.astype(np.int64))
        types[row, :len(inst.tokens)] = torch.from_numpy(inst.token_type_ids.astype(np.int64))
    labels = torch.tensor([x.label for x in chosen])
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": (ids != 0).long()}, labels, chosen


@torch.no_grad()
def _pooled_and_logits(model: AlbertForPreTraining, inputs: dict, chunk: int = 64):
    pooled, logits = [], []
    for start in range(0, len(inputs["input_ids"]), chunk):
        part = {k: v[start:start + chunk] for k, v in inputs.items()}
        out = model.albert(part["input_ids"], part["attention_mask"], part["token_type_ids"])
        pooled.append(out.pooler_output)
        logits.append(model.sop_classifier(out.pooler_output))
    return torch.cat(pooled), torch.cat(logits)


def linear_probe(train_x, train_y, test_x, steps: int, seed: int = 0) -> torch.Tensor:
    """Fit a 2-way logistic regression on frozen features (full-batch Adam, fixed steps); predictions on test_x."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    g = torch.Generator().manual_seed(seed)
    weight = (0.01 * torch.randn(train_x.shape[1], 2, generator=g)).requires_grad_()
    bias = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([weight, bias], lr=0.05)
    x = (train_x - mean) / std
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(x @ weight + bias, train_y) + 1e-3 * weight.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return (((test_x - mean) / std) @ weight + bias).argmax(-1)


def sentence_accuracy(model, task: str, trained_task: str, budget: Budget) -> dict:
    """Held-out accuracy on SOP or NSP: the model's own head if it was trained on `task`, else a linear probe."""
    test_inputs, test_y, test_instances = _sentence_set(task, "validation", budget, budget.probe_eval, seed=11)
    pooled, logits = _pooled_and_logits(model, test_inputs)
    if task == trained_task:
        predictions, method = logits.argmax(-1), "trained head"
    else:
        train_inputs, train_y, _ = _sentence_set(task, "train", budget, budget.probe_train, seed=12)
        train_pooled, _ = _pooled_and_logits(model, train_inputs)
        predictions = linear_probe(train_pooled, train_y, pooled, budget.probe_steps, seed=budget.seed)
        method = f"linear probe on frozen pooled output ({budget.probe_train} examples, {budget.probe_steps} steps)"
    correct = (predictions == test_y).float()
    result = {"accuracy": float(correct.mean()), "examples": len(test_y), "method": method}
    if task == "nsp":  # negatives whose B comes from another novel vs from the same novel
        from .corpus import load_corpus

        novel = [d.novel for d in load_corpus("austen", "validation")[:budget.max_documents]]
        cross = torch.tensor([x.label == 1 and novel[x.source_a[0]] != novel[x.source_b[0]] for x in test_instances])
        same = torch.tensor([x.label == 1 and novel[x.source_a[0]] == novel[x.source_b[0]] for x in test_instances])
        positives = test_y == 0
        for name, rows in (("negatives_other_novel", cross), ("negatives_same_novel", same),
                           ("positives", positives)):
            result[name] = {"accuracy": float(correct[rows].mean()) if rows.any() else None, "examples": int(rows.sum())}
    return result


def mlm_accuracy(record: dict) -> float | None:
    return record["eval"]["mlm_acc"] if record["eval"] else None


# ---------------------------------------------------------------------------------------------- experiments
def mini(**changes) -> AlbertConfig:
    return AlbertConfig.from_preset("albert-mini", **changes)


def sentence_task(budget: Budget) -> dict:
    """Table 5 analog: MLM only, NSP and SOP pretraining, every model scored on MLM, NSP and SOP."""
    rows = {}
    for task in ("none", "nsp", "sop"):
        model, record = pretrain(mini(), task, budget)
        rows[task] = {"mlm_acc": mlm_accuracy(record), "train_seconds": record["seconds"],
                      "nsp": sentence_accuracy(model, "nsp", task, budget),
                      "sop": sentence_accuracy(model, "sop", task, budget), "curve": record["curve"]}
    return {"rows": rows}


def _variant(sharing: str, embedding_size: int) -> AlbertConfig:
    """albert-mini with another E and sharing; with E = H there is no projection (so "none" is bert-mini)."""
    base = mini()
    return mini(sharing=sharing, embedding_size=embedding_size, embedding_projection=embedding_size != base.hidden_size,
                num_hidden_groups=base.num_hidden_layers if sharing == "none" else 1)


def _score(config: AlbertConfig, budget: Budget) -> dict:
    model, record = pretrain(config, "sop", budget)
    return {"params": count_parameters(config), "mlm_acc": mlm_accuracy(record),
            "sop": sentence_accuracy(model, "sop", "sop", budget)["accuracy"], "train_seconds": record["seconds"]}


def sharing(budget: Budget) -> dict:
    """Table 4 analog: all / attention / FFN / none, at E = 128 and E = H = 256."""
    return {"rows": {f"E={E} {strategy}": {"E": E, "sharing": strategy, **_score(_variant(strategy, E), budget)}
                     for E in (128, mini().hidden_size) for strategy in ("all", "attention", "ffn", "none")}}


def embedding_size(budget: Budget) -> dict:
    """Table 3 analog: a sweep of E for all-shared and not-shared models."""
    return {"rows": {f"{strategy} E={E}": {"E": E, "sharing": strategy, **_score(_variant(strategy, E), budget)}
                     for strategy in ("none", "all") for E in (32, 64, 128, 256)}}


def smoothness(budget: Budget) -> dict:
    """Figure 1 analog: albert-mini vs its unshared twin (bert-mini), trained and at initialisation."""
    val = _batches("sop", "validation", budget, dynamic=False, seed=budget.seed + 1).take(budget.eval_batches)
    models = {}
    for label, config in (("ALBERT (albert-mini)", mini()), ("BERT-style (bert-mini)", AlbertConfig.from_preset("bert-mini"))):
        trained, _ = pretrain(config, "sop", budget)
        models[f"{label}, trained"] = dataclasses.asdict(layer_smoothness(trained.albert, val))
        torch.manual_seed(budget.seed)
        models[f"{label}, at initialisation"] = dataclasses.asdict(
            layer_smoothness(AlbertForPreTraining(config).albert, val))
    return {"models": models}


def throughput(budget: Budget) -> dict:
    """Relative training speed of the seven paper configs on this CPU, next to the paper's Speedup column."""
    from .paper import TABLE2_SPEEDUP
    from .throughput import relative_throughput

    names = ["bert-base", "bert-large", "bert-xlarge", "albert-base", "albert-large", "albert-xlarge", "albert-xxlarge"]
    if budget == FAST:
        names = ["bert-base", "albert-base"]
        measured = relative_throughput(names, reference="bert-base", batch_size=1, seq_len=16, steps=1)
    else:
        measured = relative_throughput(names, reference="bert-large", batch_size=2, seq_len=64, steps=3)
    return {"rows": {n: {**measured[n], "paper_speedup": TABLE2_SPEEDUP.get(n)} for n in names},
            "setting": "forward + backward of AlbertModel, no optimizer, fp32"}


def memory(budget: Budget) -> dict:
    """What sharing saves: training memory of mini presets (computed and measured) and of the paper configs."""
    from .memory import measure_activation_bytes, training_memory

    rows = {}
    for name in ("albert-mini", "bert-mini"):
        config = AlbertConfig.from_preset(name)
        batch = _batches("sop", "validation", budget, dynamic=False, seed=1).take(1)[0]
        report = training_memory(config, budget.batch_size, budget.seq_len)
        torch.manual_seed(budget.seed)
        measured = measure_activation_bytes(AlbertForPreTraining(config).train(), batch)
        rows[name] = {**report.as_dict(), "activations_measured_padded_batch": measured}
    for name in ("bert-large", "albert-large", "albert-xxlarge"):
        rows[name] = training_memory(AlbertConfig.from_preset(name), 8, 512).as_dict()
    return {"rows": rows, "batch": {"mini": [budget.batch_size, budget.seq_len], "paper_configs": [8, 512]}}


def finetune_settings(budget: Budget) -> dict:
    """The fixed fine-tuning budget per task (FinetuneSettings), the same for both encoders."""
    from .finetune import FinetuneSettings

    if budget == FAST:
        return {name: FinetuneSettings(steps=2, batch_size=4, seed=budget.seed, max_train_examples=16,
                                       max_eval_examples=16) for name in ("polarity", "austen-mc", "austen-span")}
    return {"polarity": FinetuneSettings(steps=400, batch_size=32, seed=budget.seed),
            "austen-mc": FinetuneSettings(steps=300, batch_size=8, seed=budget.seed),
            "austen-span": FinetuneSettings(steps=400, batch_size=16, seed=budget.seed)}


def finetune(budget: Budget) -> dict:
    """Does pretraining help? Each task fine-tuned from the shipped pretrained encoder and from random weights."""
    from .checkpoint import load_pretrained
    from .finetune import run_task

    pretrained = load_pretrained(PRETRAINED_DIR)  # fails with a clear message when the weights are missing
    rows = {}
    for name, settings in finetune_settings(budget).items():
        rows[name] = {}
        for init in ("pretrained", "random"):
            # The loaded model, not its path: read and verified once, not once per run.
            source = pretrained if init == "pretrained" else "random"
            result = run_task(name, source, settings, config=pretrained.config)
            result.pop("model")
            rows[name][init] = {**result, "init": init, "settings": dataclasses.asdict(settings)}
    manifest = json.loads((PRETRAINED_DIR / "manifest.json").read_text())
    return {"rows": rows, "pretrained": {"path": "data/pretrained/albert-mini-austen", "step": manifest["step"],
                                         "sha256": manifest["sha256"]}}


# ---------------------------------------------------------------------------------------------- figures
def figure(name: str, result: dict):
    """The figure of one experiment's result (a matplotlib Figure), or None for results shown as tables."""
    import matplotlib.pyplot as plt

    budget = result["meta"]["budget"]
    setting = f"albert-mini family, {budget['steps']} steps x {budget['batch_size']} x {budget['seq_len']} tokens, seed {budget['seed']}"
    if name == "smoothness":
        models = {k: Smoothness(**v) for k, v in result["models"].items()}
        return plot_smoothness(models, title=f"Layer input vs output embeddings, held-out Austen ({setting})")
    if name == "finetune":
        return finetune_figure(result)
    if name == "sentence_task":
        rows = result["rows"]
        fig, ax = plt.subplots(figsize=(7, 3.6))
        metrics = [("MLM", lambda r: r["mlm_acc"]), ("NSP", lambda r: r["nsp"]["accuracy"]),
                   ("SOP", lambda r: r["sop"]["accuracy"])]
        width = 0.25
        for i, task in enumerate(rows):
            values = [100 * (get(rows[task]) or 0) for _, get in metrics]
            ax.bar(np.arange(3) + (i - 1) * width, values, width, label=f"trained with {task.upper()}")
        ax.axhline(50, color="grey", lw=0.8, ls="--")
        ax.set(xticks=range(3), xticklabels=[m for m, _ in metrics], ylabel="held-out accuracy (%)",
               title=f"Sentence task (Table 5 analog)\n{setting}")
        ax.legend(fontsize=8)
        return fig
    if name in ("sharing", "embedding_size"):
        rows = result["rows"]
        fig, (ax_p, ax_m, ax_s) = plt.subplots(1, 3, figsize=(12, 3.6))
        labels = list(rows)
        for ax, key, ylabel in ((ax_p, "params", "parameters (millions)"), (ax_m, "mlm_acc", "held-out MLM accuracy (%)"),
                                (ax_s, "sop", "held-out SOP accuracy (%)")):
            scale = 1e-6 if key == "params" else 100
            ax.barh(labels, [scale * (rows[k][key] or 0) for k in labels])
            ax.set(xlabel=ylabel)
            ax.invert_yaxis()
        for ax in (ax_m, ax_s):
            ax.set_yticklabels([])
        title = "Sharing strategies (Table 4 analog)" if name == "sharing" else "Embedding size E (Table 3 analog)"
        fig.suptitle(f"{title}: {setting}")
        fig.tight_layout()
        return fig
    if name == "throughput":
        rows = result["rows"]
        names = list(rows)
        fig, ax = plt.subplots(figsize=(8, 3.6))
        x = np.arange(len(names))
        ax.bar(x - 0.2, [rows[n]["speedup"] for n in names], 0.4, label="measured here (CPU, fp32)")
        ax.bar(x + 0.2, [rows[n]["paper_speedup"] or 0 for n in names], 0.4, label="paper, Table 2 (TPU)")
        ax.scatter(x, [rows[n]["flop_ratio"] for n in names], color="black", zorder=3, label="FLOP ratio")
        ax.set(xticks=x, xticklabels=names, ylabel="speed relative to BERT-large", yscale="log",
               title="Training throughput relative to BERT-large")
        ax.tick_params(axis="x", rotation=30)
        ax.legend(fontsize=8)
        return fig
    return None


# ---------------------------------------------------------------------------------------------- output
def finetune_figure(result: dict):
    """Bars: each task's test metric after the same fine-tuning budget, pretrained vs random encoder."""
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    labels = []
    for i, (task, pair) in enumerate(rows.items()):
        metric = "accuracy" if "accuracy" in pair["pretrained"] else "f1"
        labels.append(f"{task}\n({'accuracy' if metric == 'accuracy' else 'F1'}, "
                      f"{pair['pretrained']['settings']['steps']} steps)")
        for j, (init, colour) in enumerate((("pretrained", "tab:blue"), ("random", "tab:grey"))):
            value = pair[init][metric] * (100 if metric == "accuracy" else 1)
            ax.bar(i + (j - 0.5) * 0.38, value, 0.38, color=colour, label=f"{init} encoder" if i == 0 else None)
            ax.text(i + (j - 0.5) * 0.38, value + 1, f"{value:.1f}", ha="center", fontsize=8)
    chance = {"polarity": 50, "austen-mc": 25}
    for i, task in enumerate(rows):
        if task in chance:
            ax.hlines(chance[task], i - 0.45, i + 0.45, colors="black", linestyles="dotted",
                      label="chance" if i == 0 else None)
    ax.set_xticks(range(len(rows)), labels)
    ax.set_ylabel("test score (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Fine-tuning albert-mini: pretrained on Austen (step {result['pretrained']['step']}) vs random init")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def _git_revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_result(name: str, payload: dict, budget: Budget, out_dir: Path, seconds: float) -> Path:
    """data/results/<name>.json: the numbers and everything needed to reproduce them."""
    meta = {"experiment": name, "command": f"python -m albert_mini.experiments {name}",
            "fast_mode": budget == FAST, "budget": dataclasses.asdict(budget), "git_revision": _git_revision(),
            "torch": torch.__version__, "python": platform.python_version(), "wall_seconds": round(seconds, 1),
            "threads": torch.get_num_threads()}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps({"meta": meta, **payload}, indent=1, default=float) + "\n")
    return path


def run(name: str, budget: Budget | None = None, out_dir: Path | None = None) -> Path:
    """Run experiment `name` and write its result; returns the path."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    budget = budget or current_budget()
    start = time.perf_counter()
    payload = globals()[name](budget)
    path = write_result(name, payload, budget, out_dir or results_dir(), time.perf_counter() - start)
    fig = figure(name, json.loads(path.read_text()))
    if fig is not None:  # figures/ only for the full budget; fast runs keep theirs beside their results
        save_figure(fig, f"experiment_{name}.png", None if budget == FULL else path.parent)
    return path


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def results_tables(folder: Path) -> str:
    """Markdown tables of every result in `folder`, each next to the paper's numbers."""
    from .paper import TABLE3, TABLE4, TABLE5

    def load(name):
        path = folder / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    out = []
    if (r := load("sentence_task")) is not None:
        out += ["### Sentence task (Table 5 analog)", "",
                "| trained with | MLM acc | NSP acc | SOP acc | paper: MLM / NSP / SOP |", "|---|---|---|---|---|"]
        for task, row in r["rows"].items():
            p = TABLE5[task]
            out.append(f"| {task} | {_pct(row['mlm_acc'])} | {_pct(row['nsp']['accuracy'])} | "
                       f"{_pct(row['sop']['accuracy'])} | {p['mlm']} / {p['nsp']} / {p['sop']} |")
        nsp = r["rows"]["nsp"]["nsp"]
        if "negatives_other_novel" in nsp:
            out += ["", f"NSP-trained model on NSP negatives from another novel: "
                        f"{_pct(nsp['negatives_other_novel']['accuracy'])}% ({nsp['negatives_other_novel']['examples']}), "
                        f"from the same novel: {_pct(nsp['negatives_same_novel']['accuracy'])}% "
                        f"({nsp['negatives_same_novel']['examples']}), true next: {_pct(nsp['positives']['accuracy'])}% "
                        f"({nsp['positives']['examples']})."]
        out.append("")
    for name, title, paper, key in (("sharing", "Sharing strategies (Table 4 analog)", TABLE4, lambda row: (row["E"] if row["E"] != 256 else 768, row["sharing"])),
                                    ("embedding_size", "Embedding size (Table 3 analog)", TABLE3, lambda row: (row["sharing"], {32: 64, 64: 128, 128: 256, 256: 768}[row["E"]]))):
        if (r := load(name)) is None:
            continue
        out += [f"### {title}", "", "| model | params | MLM acc | SOP acc | paper row: params, Avg |", "|---|---|---|---|---|"]
        for label, row in r["rows"].items():
            ref = paper.get(key(row))
            ref_text = f"{ref[0]}M, {ref[1]}" if ref else "-"
            out.append(f"| {label} | {row['params'] / 1e6:.2f}M | {_pct(row['mlm_acc'])} | {_pct(row['sop'])} | {ref_text} |")
        out.append("")
    if (r := load("throughput")) is not None:
        out += ["### Training throughput relative to BERT-large (Table 2's Speedup column)", "",
                "| model | tokens/s here | speedup here | FLOP ratio | paper |", "|---|---|---|---|---|"]
        for name, row in r["rows"].items():
            out.append(f"| {name} | {row['tokens_per_second']:.0f} | {row['speedup']:.2f} | {row['flop_ratio']:.2f} | "
                       f"{row['paper_speedup'] if row['paper_speedup'] is not None else '-'} |")
        out.append("")
    if (r := load("memory")) is not None:
        out += ["### Training memory (fp32, LAMB)", "", "| model | weights + grads + optimizer (MiB) | activations (MiB) |",
                "|---|---|---|"]
        for name, row in r["rows"].items():
            fixed = row["parameters"] + row["gradients"] + row["optimizer_states"]
            out.append(f"| {name} | {fixed / 2**20:.1f} | {row['activations'] / 2**20:.1f} |")
        out.append("")
    if (r := load("finetune")) is not None:
        out += ["### Fine-tuning: pretrained vs random encoder (same budget)", "",
                "| task | metric | pretrained | random init | steps x batch | epochs |", "|---|---|---|---|---|---|"]
        for task, pair in r["rows"].items():
            p, q = pair["pretrained"], pair["random"]
            if "accuracy" in p:
                metric, a, b = "accuracy", _pct(p["accuracy"]), _pct(q["accuracy"])
            else:
                metric, a, b = "EM / F1", f"{p['exact_match']:.1f} / {p['f1']:.1f}", f"{q['exact_match']:.1f} / {q['f1']:.1f}"
            s = p["settings"]
            out.append(f"| {task} | {metric} | {a} | {b} | {s['steps']} x {s['batch_size']} | {p['epochs']:.1f} |")
        out.append("")
    if (r := load("smoothness")) is not None:
        out += ["### Smoothness (Figure 1 analog): mean angle in degrees per layer", ""]
        for label, entry in r["models"].items():
            out.append(f"- {label}: " + ", ".join(f"{d:.1f}" for d in entry["degrees"]))
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command line: run experiments; bad input ends with one error line and exit status 2."""
    return cli.run(_main, argv)


def _main(argv: list[str]) -> int:
    parser = cli.Parser(prog="python -m albert_mini.experiments",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", choices=EXPERIMENTS + ("all", "tables"),
                        help="experiments to run; `tables` prints markdown tables of the results in --out")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: data/results)")
    args = parser.parse_args(argv)
    if args.names == ["tables"]:
        print(results_tables(args.out or results_dir()))
        return 0
    names = EXPERIMENTS if "all" in args.names else args.names
    start = time.perf_counter()
    for name in names:
        path = run(name, out_dir=args.out)
        print(f"{name}: wrote {path} ({time.perf_counter() - start:.0f} s so far)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
