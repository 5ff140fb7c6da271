"""Does pretraining help? Each shipped task fine-tuned from the pretrained classroom encoder and from random weights."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np

from ...paths import PRETRAINED_MODEL, REPO_ROOT
from ...study.stats import compare_paired, seed_summary
from ...study.task_baselines import task_baselines
from ...tasks.finetuning import FinetuneSettings, run_task
from ...tasks.scoring import answers, constant_head, correctness
from ...training.checkpoint import load_pretrained
from .budget import FAST, Budget
from .tables import pm, seed_rows

CHANCE = {"polarity": 50, "austen-mc": 25}  # % a constant answer scores


def finetune_settings(budget: Budget, seed: int) -> dict[str, FinetuneSettings]:
    """The fixed fine-tuning budget per task, the same for both encoders."""
    if budget == FAST:
        return {name: FinetuneSettings(steps=2, batch_size=4, seed=seed, max_train_examples=16,
                                       max_eval_examples=16) for name in ("polarity", "austen-mc", "austen-span")}
    # About 2 passes over polarity's and austen-span's training sets, 1.3 over austen-mc's (3-hour cap).
    return {"polarity": FinetuneSettings(steps=250, batch_size=32, seed=seed),
            "austen-mc": FinetuneSettings(steps=200, batch_size=8, seed=seed),
            "austen-span": FinetuneSettings(steps=250, batch_size=16, seed=seed)}


@dataclass(frozen=True)
class Finetuning:
    """One fine-tuning run: a task, the encoder it starts from, a seed and the budget."""

    task: str
    init: str  # "pretrained" (the shipped classroom model) or "random"
    seed: int
    settings: FinetuneSettings

    def spec(self, pretrained_sha256: str) -> dict:
        return {"kind": "finetuning", "task": self.task, "init": self.init, "seed": self.seed,
                "settings": dataclasses.asdict(self.settings),
                "encoder": pretrained_sha256 if self.init == "pretrained" else None}


def plan(budget: Budget, seeds) -> list[Finetuning]:
    return [Finetuning(task, init, seed, settings) for seed in seeds
            for task, settings in finetune_settings(budget, seed).items() for init in ("pretrained", "random")]


def finetune_one(run: Finetuning, pretrained) -> dict:
    source = pretrained if run.init == "pretrained" else "random"  # the loaded model: read and verified once
    result = run_task(run.task, source, run.settings, config=pretrained.config)
    model = result.pop("model")
    return {**result, "init": run.init, "settings": dataclasses.asdict(run.settings),
            "correct": correctness(model, run.task, run.settings)}


def run(runner) -> dict:
    pretrained = load_pretrained(PRETRAINED_MODEL)  # fails with a clear message when the weights are missing
    manifest = json.loads((PRETRAINED_MODEL / "manifest.json").read_text())
    runs: dict[str, dict[str, dict[int, dict]]] = {}
    for item in plan(runner.budget, runner.seeds):
        result = runner.cached(item.spec(manifest["sha256"]), lambda item=item: finetune_one(item, pretrained),
                               f"{item.task} {item.init} seed {item.seed}")
        runs.setdefault(item.task, {}).setdefault(item.init, {})[item.seed] = result
    rows = {}
    baselines = task_baselines()
    for task, pair in runs.items():
        metrics = ("accuracy",) if "accuracy" in pair["pretrained"][min(pair["pretrained"])] else ("exact_match", "f1")
        rows[task] = {}
        for init, recs in pair.items():
            first = recs[min(recs)]
            # The row pools its seeds: the settings shared by every run, and the seeds apart.
            shared = {k: v for k, v in first["settings"].items() if k != "seed"}
            predicted = [answers(task, recs[s]["correct"], recs[s]["settings"].get("max_eval_examples"))
                         for s in sorted(recs)]
            rows[task][init] = {**seed_rows(recs, metrics), "settings": shared, "seeds": sorted(recs),
                                "epochs": first["epochs"], "train_examples": first.get("train_examples"),
                                "answers": predicted,
                                "constant_seeds": sum(constant_head({"answers": a}) for a in predicted if a)
                                if any(predicted) else None,  # None: the records cannot tell
                                "n": first.get("n"), "correct": [recs[s]["correct"] for s in sorted(recs)]
                                if first["correct"] is not None else None,
                                "train_seconds": [recs[s]["train_seconds"] for s in sorted(recs)],
                                "history": [recs[s].get("history") for s in sorted(recs)]}  # training loss, per seed
        ours, theirs = rows[task]["pretrained"], rows[task]["random"]
        baseline = baselines[task]
        # Seeds are the unit: the difference seed by seed (same batches, same head initialisation) with a t
        # interval over seeds; McNemar per seed on the test examples only as supporting evidence.
        rows[task]["pretrained_vs_random"] = {m: seed_summary(
            [a - b for a, b in zip(ours[m]["values"], theirs[m]["values"])]) for m in metrics}
        if ours["correct"] is not None:
            # No test against a head that gave one answer to every example: None marks that seed.
            rows[task]["pretrained_vs_random"]["mcnemar_per_seed"] = [
                None if any(x and constant_head({"answers": x}) for x in (p, q)) else compare_paired(a, b)["mcnemar_p"]
                for a, b, p, q in zip(ours["correct"], theirs["correct"], ours["answers"], theirs["answers"])]
            if ours["n"] == baseline["n"]:  # the baseline answers the same test examples, once for every seed
                for init in ("pretrained", "random"):
                    rows[task][f"{init}_vs_baseline"] = {"accuracy": seed_summary(
                        [v - baseline["accuracy"] for v in rows[task][init]["accuracy"]["values"]])}
    return {"rows": rows, "chance": CHANCE, "baselines": baselines,
            "pretrained": {"path": PRETRAINED_MODEL.relative_to(REPO_ROOT).as_posix(), "step": manifest["step"],
                           "sha256": manifest["sha256"]},
            "paired_test": "the difference seed by seed (same batches, same head initialisation), mean and t interval "
                           "over seeds; accuracy tasks also McNemar's exact test per seed on the test examples"}


def metric_of(pair: dict) -> str:
    return "accuracy" if "accuracy" in pair["pretrained"] else "f1"


def figure(result: dict):
    """One panel per task, stacked and zoomed to its scores: pretrained vs random encoder as rows (mean ± std,
    seeds as dots), chance and the no-network baseline as vertical lines; stacked so that the book's column shows
    them at a readable size."""
    from ...study.figure_style import book_figure, book_style

    rows = result["rows"]
    fig, axes = book_figure(len(rows), 1, height=1.9 * len(rows) + 1.6)
    with book_style():
        for ax, (task, pair) in zip(np.atleast_1d(axes), rows.items()):
            metric = metric_of(pair)
            scale = 100 if metric == "accuracy" else 1
            for i, (init, colour) in enumerate((("pretrained", "tab:blue"), ("random", "tab:grey"))):
                summary = pair[init][metric]
                ax.errorbar([scale * summary["mean"]], [i], xerr=[scale * (summary["std"] or 0)], fmt="o",
                            capsize=5, color=colour)
                ax.scatter([scale * v for v in summary["values"]], [i] * len(summary["values"]), s=12,
                           color=colour, alpha=0.4)
            if task in result["chance"]:
                ax.axvline(result["chance"][task], color="black", ls="--", lw=1, label="chance (constant answer)")
            baseline = result.get("baselines", {}).get(task)
            if baseline:
                ax.axvline(baseline[metric] * scale if metric == "accuracy" else baseline[metric], color="tab:red",
                           ls=":", lw=1.5, label="no-network baseline")
            ax.set_yticks([0, 1], ["pretrained", "random"])
            ax.set_ylim(1.6, -0.6)
            unit = "test accuracy (%)" if metric == "accuracy" else "test F1"
            ax.set_title(f"{task}: {unit}, {pair['pretrained']['settings']['steps']} steps", loc="left")
            ax.grid(axis="x", alpha=0.3)
        handles, names = [], []
        for ax in np.atleast_1d(axes):
            for handle, name in zip(*ax.get_legend_handles_labels()):
                if name not in names:
                    handles.append(handle)
                    names.append(name)
        fig.legend(handles, names, loc="lower center", ncol=2, bbox_to_anchor=(0.5, 0.0))
        seeds = len(result["meta"].get("seeds", [0]))
        fig.suptitle(f"Fine-tuning albert-mini: the shipped encoder (step {result['pretrained']['step']})\n"
                     f"vs random init, {seeds} seed{'s' if seeds != 1 else ''}: mean ± std, seeds as dots")
        fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def table(result: dict) -> str:
    out = ["### Fine-tuning: pretrained vs random encoder (same budget, mean ± std over seeds)", "",
           "| task | metric | pretrained | random init | difference, t 95% over seeds | no-network baseline "
           "| steps x batch "
           "| epochs |",
           "|---|---|---|---|---|---|---|---|"]
    for task, pair in result["rows"].items():
        p, q, versus = pair["pretrained"], pair["random"], pair["pretrained_vs_random"]
        s = p["settings"]
        baseline = result.get("baselines", {}).get(task)
        if "accuracy" in p:
            d = versus["accuracy"]
            per_seed = ", ".join(f"{100 * v:+.1f}" for v in d["values"])
            diff = f"{100 * d['mean']:+.1f} [{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}] (seeds: {per_seed})"
            base = f"{100 * baseline['accuracy']:.1f}" if baseline else "-"
            out.append(f"| {task} | accuracy | {pm(p['accuracy'])} | {pm(q['accuracy'])} | {diff} | {base} | "
                       f"{s['steps']} x {s['batch_size']} | {p['epochs']:.1f} |")
        else:
            em = versus["exact_match"]
            base = f"{baseline['exact_match']:.1f} / {baseline['f1']:.1f}" if baseline else "-"
            out.append(f"| {task} | EM / F1 | {pm(p['exact_match'], 1)} / {pm(p['f1'], 1)} | "
                       f"{pm(q['exact_match'], 1)} / {pm(q['f1'], 1)} | EM {em['mean']:+.1f} "
                       f"[{em['ci95'][0]:+.1f}, {em['ci95'][1]:+.1f}] | {base} | "
                       f"{s['steps']} x {s['batch_size']} | {p['epochs']:.1f} |")
    return "\n".join(out)
