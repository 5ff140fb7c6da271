"""Does pretraining help? Each shipped task fine-tuned from the pretrained classroom encoder and from random weights."""

from __future__ import annotations

import dataclasses
import json

from ...paths import PRETRAINED_MODEL, REPO_ROOT
from ...tasks.finetune import FinetuneSettings, run_task
from ...training.checkpoint import load_pretrained
from .common import FAST, Budget

CHANCE = {"polarity": 50, "austen-mc": 25}  # % a constant answer scores


def finetune_settings(budget: Budget) -> dict[str, FinetuneSettings]:
    """The fixed fine-tuning budget per task, the same for both encoders."""
    if budget == FAST:
        return {name: FinetuneSettings(steps=2, batch_size=4, seed=budget.seed, max_train_examples=16,
                                       max_eval_examples=16) for name in ("polarity", "austen-mc", "austen-span")}
    return {"polarity": FinetuneSettings(steps=400, batch_size=32, seed=budget.seed),
            "austen-mc": FinetuneSettings(steps=300, batch_size=8, seed=budget.seed),
            "austen-span": FinetuneSettings(steps=400, batch_size=16, seed=budget.seed)}


def run(budget: Budget) -> dict:
    pretrained = load_pretrained(PRETRAINED_MODEL)  # fails with a clear message when the weights are missing
    rows = {}
    for name, settings in finetune_settings(budget).items():
        rows[name] = {}
        for init in ("pretrained", "random"):
            # The loaded model, not its path: read and verified once, not once per run.
            source = pretrained if init == "pretrained" else "random"
            result = run_task(name, source, settings, config=pretrained.config)
            result.pop("model")
            rows[name][init] = {**result, "init": init, "settings": dataclasses.asdict(settings)}
    manifest = json.loads((PRETRAINED_MODEL / "manifest.json").read_text())
    return {"rows": rows, "pretrained": {"path": PRETRAINED_MODEL.relative_to(REPO_ROOT).as_posix(),
                                         "step": manifest["step"], "sha256": manifest["sha256"]}}


def figure(result: dict):
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
    for i, task in enumerate(rows):
        if task in CHANCE:
            ax.hlines(CHANCE[task], i - 0.45, i + 0.45, colors="black", linestyles="dotted",
                      label="chance" if i == 0 else None)
    ax.set_xticks(range(len(rows)), labels)
    ax.set_ylabel("test score (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Fine-tuning albert-mini: pretrained on Austen (step {result['pretrained']['step']}) vs random init")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def table(result: dict) -> str:
    out = ["### Fine-tuning: pretrained vs random encoder (same budget)", "",
           "| task | metric | pretrained | random init | steps x batch | epochs |", "|---|---|---|---|---|---|"]
    for task, pair in result["rows"].items():
        p, q = pair["pretrained"], pair["random"]
        if "accuracy" in p:
            metric, a, b = "accuracy", f"{100 * p['accuracy']:.1f}", f"{100 * q['accuracy']:.1f}"
        else:
            metric = "EM / F1"
            a, b = (f"{r['exact_match']:.1f} / {r['f1']:.1f}" for r in (p, q))
        s = p["settings"]
        out.append(f"| {task} | {metric} | {a} | {b} | {s['steps']} x {s['batch_size']} | {p['epochs']:.1f} |")
    return "\n".join(out)
