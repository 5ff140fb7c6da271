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
import os
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
from ...text.batch_source import PhasedBatches
from ...text.batches import PretrainingBatches, build_pretraining_dataset, tokenize_documents
from ...text.corpus import load_corpus
from ...text.instances import SENTENCE_TASKS, build_instances
from ...text.padding import pad_batch
from ...text.tokenizer import Tokenizer
from ...training.recipe import build_pretraining_model
from ...training.trainer import TrainConfig, train
from ..leak_probe import fit_stump
from ..probes import linear_probe, pooled_outputs
from ..smoothness import layer_smoothness
from ..stats import compare_paired, seed_summary

COMMAND = "python -m albert_mini.study.experiments"


# Training tokens per model, the one budget knob of each mode (`make experiments` is "full"; tests run "fast").
# Full: 512 steps of 32 x 128 tokens (2,097,152), half of them at 64 tokens: at 655,360 tokens (the budget before)
# every model of Tables 3-4 sat on the unigram plateau and every sentence head answered one class.
TOKENS_PER_MODEL = {"full": 512 * 32 * 128, "fast": 2 * 4 * 64}
SEEDS = (0, 1, 2)  # every model of every experiment is trained once per seed


@dataclass(frozen=True)
class Budget:
    """Everything that decides a pretraining run besides the model, the task and the seed."""

    tokens: int  # training tokens per model (steps = tokens / (batch_size x seq_len))
    batch_size: int = 32
    seq_len: int = 128
    # BERT's curriculum, as `pretrain --short-seq-len 64 --short-fraction 0.9`: the first 90% of the steps on
    # sequences of 64 tokens (twice as many per batch: the same tokens per step), the rest at seq_len.
    short_seq_len: int | None = 64
    short_fraction: float = 0.9
    lr: float = 5e-3
    # A quarter of the steps (40 of 160). The CLI's 2.5% (the paper's 3,125 of 125,000 steps) gives 4 steps here,
    # and after 4 or 16 warm-up steps (even at peak 1e-2) LAMB left no model of 160 steps off the unigram
    # plateau (held-out MLM 6.8% = the unigram answer, every seed); with 40 the same run reached 8.3% and rising.
    # Long runs warm up for 125 steps (5,000 x 2.5%): what counts is the number of steps, not the fraction.
    warmup_fraction: float = 0.25
    optimizer: str = "lamb"
    eval_batches: int = 16  # held-out batches of batch_size x seq_len for MLM accuracy and smoothness
    probe_train: int = 2048  # training-split instances a linear probe is fitted on
    probe_eval: int = 1024  # held-out instances a sentence task is scored on
    probe_steps: int = 300  # full-batch Adam steps of a linear probe
    max_documents: int | None = None  # use only the first chapters of each split (fast mode)

    def __post_init__(self):
        if self.tokens < self.batch_size * self.seq_len:
            raise ValueError(f"tokens={self.tokens} is less than one batch of {self.batch_size} x {self.seq_len}")
        if self.short_seq_len is not None and (self.seq_len % self.short_seq_len or not 0 < self.short_fraction < 1):
            raise ValueError(f"short_seq_len {self.short_seq_len} must divide seq_len {self.seq_len} and "
                             f"short_fraction {self.short_fraction} must be in (0, 1)")

    @property
    def steps(self) -> int:
        return self.tokens // (self.batch_size * self.seq_len)

    @property
    def warmup(self) -> int:
        return round(self.warmup_fraction * self.steps)

    @property
    def short_steps(self) -> int:
        """Steps trained at short_seq_len before the switch (0 without the curriculum)."""
        return round(self.short_fraction * self.steps) if self.short_seq_len is not None else 0

    @property
    def short_batch_size(self) -> int:
        return self.batch_size * self.seq_len // self.short_seq_len if self.short_seq_len else self.batch_size

    def as_dict(self) -> dict:
        """The settings and what they imply (steps, warm-up), as recorded with every result."""
        return {**dataclasses.asdict(self), "steps": self.steps, "warmup": self.warmup,
                "short_steps": self.short_steps}


# 20 held-out batches: the validation chapters hold 21 batches of 32 x 128 tokens.
FULL = Budget(tokens=TOKENS_PER_MODEL["full"], short_fraction=0.5, warmup_fraction=0.1, eval_batches=20)
FAST = Budget(tokens=TOKENS_PER_MODEL["fast"], batch_size=4, seq_len=64, short_seq_len=32, short_fraction=0.5,
              eval_batches=1, probe_train=32, probe_eval=32, probe_steps=5, max_documents=6)


def experiment_device() -> torch.device:
    """Where experiments train: ALBERT_MINI_DEVICE (cpu, cuda, cuda:1, ...), default the CPU. The device is
    recorded with every run, not keyed: a run made on a GPU stands for the same settings on the CPU."""
    return torch.device(os.environ.get("ALBERT_MINI_DEVICE", "cpu"))


def device_name(device: torch.device | None = None) -> str:
    """The device a run trains on, as recorded with it: the CPU's model name or the GPU's."""
    device = device or experiment_device()
    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)}"
    return f"CPU: {cpu_model()}"


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
@functools.cache
def token_documents(split: str, limit: int | None = None):
    """The first `limit` chapters (all: None) of an Austen split, tokenized once per process."""
    return tokenize_documents(load_corpus("austen", split)[:limit], Tokenizer.default())


def pretraining_batches(task: str, split: str, budget: Budget, dynamic: bool, seed: int,
                        seq_len: int | None = None, batch_size: int | None = None) -> PretrainingBatches:
    """Masked batches of a split for `task`, at the budget's length and batch size unless others are given."""
    dataset = build_pretraining_dataset(token_documents(split, budget.max_documents), Tokenizer.default(), task,
                                        seq_len or budget.seq_len, seed=seed, dynamic=dynamic)
    return PretrainingBatches(dataset, batch_size or budget.batch_size)


def training_batches(task: str, budget: Budget, seed: int):
    """The training source: short sequences first when the budget has the curriculum, as the pretraining CLI."""
    long = pretraining_batches(task, "train", budget, dynamic=True, seed=seed)
    if budget.short_seq_len is None:
        return long
    short = pretraining_batches(task, "train", budget, dynamic=True, seed=seed, seq_len=budget.short_seq_len,
                                batch_size=budget.short_batch_size)
    return PhasedBatches(short, long, switch_after=budget.short_steps)


HELD_OUT_SEED = 1  # the same masked held-out batches for every model and seed: scores pair up


def held_out_batches(budget: Budget, task: str = "sop") -> list[dict]:
    """The budget's held-out batches: validation chapters, masked once, with sentence labels (SOP for MLM only)."""
    task = task if SENTENCE_TASKS[task].labelled else "sop"
    batches = pretraining_batches(task, "validation", budget, dynamic=False, seed=HELD_OUT_SEED)
    return batches.take(budget.eval_batches)


# ---------------------------------------------------------------------------------------------- pretraining
def pretrain(config: AlbertConfig, task: str, budget: Budget, seed: int):
    """Pretrain `config` on the Austen training chapters with `task` beside MLM.

    Returns the trained model, a record of the run and the smoothness of the encoder it started from."""
    model = build_pretraining_model(config, task, token_documents("train", budget.max_documents), seed=seed)
    at_init = layer_smoothness(model.albert, held_out_batches(budget))
    model.to(experiment_device())
    start = time.perf_counter()
    result = train(model, training_batches(task, budget, seed),
                   TrainConfig(max_steps=budget.steps, log_every=max(1, budget.steps // 20), progress=False),
                   optimizer=budget.optimizer, lr=budget.lr, warmup_steps=budget.warmup,
                   val_batches=held_out_batches(budget, task))
    record = {"seconds": time.perf_counter() - start, "steps": result.step, "eval": result.eval,
              "curve": training_curve(result.history)}
    return model.eval(), record, at_init


def training_curve(history: list[dict], keys=("step", "loss", "mlm_acc", "sentence_acc")) -> list[dict]:
    """The training lines of a run's history, reduced to `keys`: the curve a result records."""
    return [{k: h.get(k) for k in keys} for h in history if h["type"] == "train"]


def mlm_accuracy(record: dict) -> float | None:
    """Held-out MLM accuracy at the end of a pretraining run (None when it was not evaluated)."""
    return record["eval"]["mlm_acc"] if record["eval"] else None


@dataclass(frozen=True)
class Pretraining:
    """One pretraining run of an experiment: a model, its sentence task and seed, and what to measure on it."""

    label: str
    config: AlbertConfig
    task: str
    seed: int
    nsp: bool = False  # also score NSP (a sentence_task measurement; the others need SOP only)

    def spec(self, budget: Budget) -> dict:
        """What decides the run's numbers: the cache key (the label and the measurement set are not in it)."""
        return {"kind": "pretraining", "config": self.config.to_dict(), "task": self.task, "seed": self.seed,
                "budget": dataclasses.asdict(budget)}

    def measured(self, record: dict) -> bool:
        """Whether a cached record holds everything this run asks for."""
        return not self.nsp or "nsp" in record


def on_device(batches: list[dict], device: torch.device) -> list[dict]:
    return [{k: v.to(device) for k, v in b.items()} for b in batches]


def measure(run: Pretraining, budget: Budget) -> dict:
    """Train one model and take every measurement an experiment reads from it (on the device it trained on)."""
    model, record, at_init = pretrain(run.config, run.task, budget, run.seed)
    device = next(model.parameters()).device
    result = {"params": count_parameters(run.config), "mlm_acc": mlm_accuracy(record),
              "mlm_loss": record["eval"]["mlm_loss"] if record["eval"] else None,
              "train_seconds": record["seconds"],
              "steps": record["steps"], "curve": record["curve"],
              "sop": sentence_accuracy(model, "sop", run.task, budget, run.seed),
              "smoothness": dataclasses.asdict(layer_smoothness(model.albert,
                                                                on_device(held_out_batches(budget), device))),
              "smoothness_init": dataclasses.asdict(at_init)}
    if run.nsp:
        result["nsp"] = sentence_accuracy(model, "nsp", run.task, budget, run.seed)
    return result


# ---------------------------------------------------------------------------------------------- sentence tasks
@functools.cache
def sentence_set(task: str, split: str, budget: Budget, limit: int, seed: int):
    """Up to `limit` unmasked instances of an SOP or NSP split as padded tensors, their labels and the instances.

    Cached: every model of an experiment is scored on the same sets, so they are built once (read only)."""
    instances = build_instances(token_documents(split, budget.max_documents), task, budget.seq_len, seed=seed)
    order = np.random.default_rng(seed).permutation(len(instances))[:limit]
    chosen = [instances[i] for i in order]
    inputs = pad_batch({"input_ids": [x.tokens for x in chosen], "token_type_ids": [x.token_type_ids for x in chosen]})
    return inputs, torch.tensor([x.label for x in chosen]), chosen


def held_out_sentences(task: str, budget: Budget):
    """The held-out pairs every model is scored on (the same for every model and seed: scores pair up)."""
    return sentence_set(task, "validation", budget, budget.probe_eval, seed=11)


def probe_sentences(task: str, budget: Budget):
    """The training pairs a linear probe is fitted on."""
    return sentence_set(task, "train", budget, budget.probe_train, seed=12)


def bits(correct: torch.Tensor) -> str:
    """Per-example correctness as a string of 0/1, the form results store for paired tests."""
    return "".join("1" if c else "0" for c in correct.tolist())


def sentence_accuracy(model: AlbertForPreTraining, task: str, trained_task: str, budget: Budget, seed: int) -> dict:
    """Held-out accuracy on SOP or NSP: the model's own head if it was trained on `task`, else a linear probe."""
    test_inputs, test_y, test_instances = held_out_sentences(task, budget)
    device = next(model.parameters()).device
    pooled, logits = pooled_outputs(model, {k: v.to(device) for k, v in test_inputs.items()})
    pooled, logits = pooled.cpu(), logits.cpu()
    if task == trained_task:
        predictions, method = logits.argmax(-1), "trained head"
    else:
        train_inputs, train_y, _ = probe_sentences(task, budget)
        train_pooled, _ = pooled_outputs(model, {k: v.to(device) for k, v in train_inputs.items()})
        train_pooled = train_pooled.cpu()
        predictions = linear_probe(train_pooled, train_y, pooled, budget.probe_steps, seed=seed)
        method = f"linear probe on frozen pooled output ({budget.probe_train} examples, {budget.probe_steps} steps)"
    correct = predictions == test_y
    result = {"accuracy": float(correct.float().mean()), "examples": len(test_y), "method": method,
              "correct": bits(correct), "answers": sorted(set(predictions.tolist()))}
    if task == "nsp":  # negatives whose B comes from another novel vs from the same novel
        for name, rows in nsp_groups(test_instances, test_y, budget).items():
            result[name] = {"accuracy": float(correct[rows].float().mean()) if rows.any() else None,
                            "examples": int(rows.sum())}
    return result


def nsp_groups(instances, labels: torch.Tensor, budget: Budget) -> dict[str, torch.Tensor]:
    """Masks over NSP pairs: negatives from another novel, negatives from the same novel, true next sentences."""
    novel = [d.novel for d in load_corpus("austen", "validation")[:budget.max_documents]]
    cross = torch.tensor([x.label == 1 and novel[x.source_a[0]] != novel[x.source_b[0]] for x in instances])
    same = torch.tensor([x.label == 1 and novel[x.source_a[0]] == novel[x.source_b[0]] for x in instances])
    return {"negatives_other_novel": cross, "negatives_same_novel": same, "positives": labels == 0}


def sentence_baselines(task: str, budget: Budget) -> dict:
    """What a held-out SOP or NSP set gives without a network: the majority label, and a word-overlap stump.

    The stump thresholds the share of A's word pieces that also occur in B, fitted on the probe's training pairs:
    topic shows up as overlap, order does not (a swapped pair has the same overlap)."""
    _, test_y, test = held_out_sentences(task, budget)
    _, train_y, train = probe_sentences(task, budget)

    def overlap(instances):
        values = []
        for x in instances:
            a, b = set(x.tokens[1:1 + x.len_a].tolist()), set(x.tokens[2 + x.len_a:2 + x.len_a + x.len_b].tolist())
            values.append([len(a & b) / max(1, len(a))])
        return np.array(values)

    predict = fit_stump(overlap(train), train_y.numpy())
    majority = max(float(test_y.float().mean()), 1 - float(test_y.float().mean()))
    return {"majority": majority, "overlap_stump": float((predict(overlap(test)) == test_y.numpy()).mean()),
            "examples": len(test_y)}


# ---------------------------------------------------------------------------------------------- results
def git_revision() -> str:
    """The checkout's short commit hash (with "+dirty" when files differ from it), or "unknown" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=REPO_ROOT).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True, cwd=REPO_ROOT).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@functools.cache
def cpu_model() -> str:
    """The CPU's model name as lscpu prints it (timings are labelled with it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write_result(name: str, payload: dict, budget: Budget, seeds, out_dir: Path, seconds: float,
                 command: str | None = None, compute_seconds: float | None = None,
                 run_devices: list[str] | None = None) -> Path:
    """<out_dir>/<name>.json: the numbers and everything needed to reproduce them. `wall_seconds` is this
    process's time; `compute_seconds` sums the time every run used took when it was computed, possibly in earlier
    sittings (runs from the cache)."""
    meta = {"experiment": name, "command": command or f"{COMMAND} {name}", "fast_mode": budget == FAST,
            "budget": budget.as_dict(), "seeds": list(seeds), "git_revision": git_revision(), "cpu": cpu_model(),
            "cores": os.cpu_count(), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "python": platform.python_version(), "wall_seconds": round(seconds, 1),
            "compute_seconds": None if compute_seconds is None else round(compute_seconds, 1),
            "run_devices": run_devices or []}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps({"meta": meta, **payload}, indent=1, default=float) + "\n")
    return path


def setting(result: dict) -> str:
    """The budget a result was made with, for figure titles."""
    meta = result["meta"]
    budget = meta["budget"]
    seeds = meta.get("seeds", [budget.get("seed", 0)])
    tokens = budget.get("tokens", budget["steps"] * budget["batch_size"] * budget["seq_len"])
    return f"{budget['steps']} steps, {tokens:,} tokens per model, {len(seeds)} seed(s)"


def pct(value) -> str:
    """An accuracy in percent with one decimal, or "-" when there is none."""
    return "-" if value is None else f"{100 * value:.1f}"


def pm(summary: dict | None, scale: float = 100, digits: int = 1) -> str:
    """"mean +- sample std" of a seed summary (just the mean for one seed), or "-"."""
    if summary is None:
        return "-"
    if summary.get("std") is None:
        return f"{scale * summary['mean']:.{digits}f}"
    return f"{scale * summary['mean']:.{digits}f} ± {scale * summary['std']:.{digits}f}"


def seed_rows(records: dict[int, dict], keys: tuple[str, ...]) -> dict:
    """Per-seed values of `keys` and their summaries: {"per_seed": {...}, key: seed_summary, ...}."""
    def value(record, key):
        entry = record[key]
        return entry["accuracy"] if isinstance(entry, dict) else entry

    out = {"per_seed": {str(s): {k: value(r, k) for k in keys} for s, r in records.items()}}
    for key in keys:
        out[key] = seed_summary([value(r, key) for r in records.values()])
    return out


def correct_rows(records: dict[int, dict], task: str) -> list[str]:
    """The per-example correctness of `task` for every seed, in seed order: one side of a paired test."""
    return [records[s][task]["correct"] for s in sorted(records)]


def paired_mlm(records_a: dict[int, dict], records_b: dict[int, dict], key: str = "mlm_acc") -> dict:
    """A held-out MLM measure of A minus B, paired by seed (same data order, masks and held-out batches): the
    seeds are the unit, so the interval is a t interval over the per-seed differences."""
    return seed_summary([records_a[s][key] - records_b[s][key] for s in sorted(records_a)])


def constant_head(score: dict) -> bool:
    """Whether a sentence score came from a head or probe that gave one answer to every pair."""
    return len(score.get("answers", [0, 1])) == 1


def variant_rows(records: dict[str, dict[int, dict]], keys: dict[str, dict], budget: Budget) -> dict:
    """Rows of a Table 3/4 analog: parameters, held-out MLM loss (the primary measure) and accuracy over seeds,
    each paired seed by seed with its baseline row; SOP only with the count of seeds whose head answered one
    class (a constant head is reported as such, never tested)."""
    rows = {}
    for label, info in keys.items():
        recs, base = records[label], records[info["baseline"]]
        rows[label] = {**info, "params": next(iter(recs.values()))["params"],
                       **seed_rows(recs, ("mlm_loss", "mlm_acc", "sop")),
                       "sop_constant_seeds": sum(constant_head(recs[s]["sop"]) for s in recs),
                       "correct_sop": correct_rows(recs, "sop"),
                       "train_seconds": [recs[s]["train_seconds"] for s in sorted(recs)]}
        if label != info["baseline"]:
            versus = {"mlm_loss": paired_mlm(recs, base, "mlm_loss"), "mlm_acc": paired_mlm(recs, base)}
            if not any(constant_head(r[s]["sop"]) for r in (recs, base) for s in r):
                versus["sop"] = compare_paired(correct_rows(recs, "sop"), correct_rows(base, "sop"))
            rows[label]["vs_baseline"] = versus
    return {"rows": rows, "baselines": {"sop": sentence_baselines("sop", budget)},
            "paired_test": "MLM loss and accuracy: difference to the baseline row seed by seed (same data order, "
                           "masks and held-out batches), mean and t interval over seeds; SOP: paired tests only "
                           "where no head of either row answered one class"}


def plot_seed_cells(ax, cells: list[dict], scale: float = 100) -> None:
    """Cells of seed_summary (mean, std, values) at x = 0, 1, ...: mean ± std as error bars, each seed as a dot."""
    x = np.arange(len(cells))
    ax.errorbar(x, [scale * c["mean"] for c in cells], yerr=[scale * (c["std"] or 0) for c in cells], fmt="o",
                capsize=4, color="tab:blue", label="ours: mean ± std over seeds")
    for i, cell in enumerate(cells):
        ax.scatter([i] * len(cell["values"]), [scale * v for v in cell["values"]], s=10, color="tab:blue", alpha=0.35)


def params_figure(result: dict, title: str, paper_row):
    """Three panels per model variant: held-out MLM loss and accuracy (mean ± std, seeds as dots), the paper's Avg."""
    import matplotlib.pyplot as plt

    rows = result["rows"]
    labels = list(rows)
    x = np.arange(len(labels))
    fig, (ax_l, ax_m, ax_p) = plt.subplots(1, 3, figsize=(15, 4.8))
    plot_seed_cells(ax_l, [rows[k]["mlm_loss"] for k in labels], scale=1)
    ax_l.set(ylabel="held-out MLM loss (nats, lower is better)")
    plot_seed_cells(ax_m, [rows[k]["mlm_acc"] for k in labels])
    ax_m.set(ylabel="held-out MLM accuracy (%)")
    paper = [paper_row(rows[k]) for k in labels]
    ax_p.scatter([i for i, p in enumerate(paper) if p], [p[1] for p in paper if p], marker="D", color="tab:red",
                 label="paper: Avg of 5 fine-tuned tasks")
    ax_p.set(ylabel="paper's Avg score (ALBERT-base shape)")
    ticks = [f"{k}\n{rows[k]['params'] / 1e6:.2f}M" for k in labels]
    for ax in (ax_l, ax_m, ax_p):
        ax.set_xticks(x, ticks, rotation=45, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.set_xlim(-0.6, len(labels) - 0.4)
    handles = [h for ax in (ax_l, ax_p) for h in ax.get_legend_handles_labels()[0]]
    names = [n for ax in (ax_l, ax_p) for n in ax.get_legend_handles_labels()[1]]
    unique = dict(zip(names, handles))
    fig.legend(unique.values(), unique.keys(), loc="lower center", ncol=3, fontsize=9, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(f"{title}: {setting(result)} (x: model and its parameters)")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def params_table(result: dict, title: str, paper_row) -> str:
    """Markdown rows of model variants (params, held-out MLM loss and accuracy over seeds, paired differences to
    the baseline row over seeds) beside the paper row `paper_row(row)` picks."""
    out = [f"### {title}", "", "| model | params | MLM loss | MLM acc | vs baseline: MLM loss (t 95%) | "
           "vs baseline: MLM acc (t 95%) | SOP | paper row: params, Avg |", "|---|---|---|---|---|---|---|---|"]
    for label, row in result["rows"].items():
        ref = paper_row(row)
        ref_text = f"{ref[0]}M, {ref[1]}" if ref else "-"
        versus = row.get("vs_baseline")
        if versus:
            texts = []
            for key, scale, digits in (("mlm_loss", 1, 3), ("mlm_acc", 100, 1)):
                d = versus[key]
                interval = (f" [{scale * d['ci95'][0]:+.{digits}f}, {scale * d['ci95'][1]:+.{digits}f}]"
                            if d["ci95"] else "")
                texts.append(f"{scale * d['mean']:+.{digits}f}{interval}")
            loss_text, acc_text = texts
        else:
            loss_text = acc_text = "(baseline)"
        n = len(row["sop"]["values"])
        sop_text = (f"constant in {row['sop_constant_seeds']} of {n} seeds" if row.get("sop_constant_seeds")
                    else pm(row["sop"]))
        out.append(f"| {label} | {row['params'] / 1e6:.2f}M | {pm(row['mlm_loss'], 1, 3)} | {pm(row['mlm_acc'])} | "
                   f"{loss_text} | {acc_text} | {sop_text} | {ref_text} |")
    return "\n".join(out)
