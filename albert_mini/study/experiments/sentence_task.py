"""Table 5 analog: pretrain with no sentence task, NSP or SOP; score every model on MLM, NSP and SOP.

A model is scored on the sentence task it was trained with by its own head, and on the other by a linear probe
on its frozen pooled output (fitted on training pairs, scored on held-out pairs). Every model and seed is scored
on the same held-out pairs, so two models are compared example by example (McNemar and a paired bootstrap).
"""

from __future__ import annotations

import numpy as np

from ..paper import TABLE5
from ..stats import compare_paired
from .common import (Budget, Pretraining, correct_rows, mini, plot_seed_cells, pm, sentence_baselines, seed_rows,
                     setting)

TASKS = tuple(TABLE5)  # none, nsp, sop: one model per row of the paper's table
# The paper's contrast, as paired comparisons (model A vs model B, scored on one task).
CONTRASTS = {"sop_vs_none_on_nsp": ("sop", "none", "nsp"), "nsp_vs_none_on_sop": ("nsp", "none", "sop"),
             "sop_vs_nsp_on_sop": ("sop", "nsp", "sop"), "nsp_vs_sop_on_nsp": ("nsp", "sop", "nsp")}


def plan(budget: Budget, seeds) -> list[Pretraining]:
    return [Pretraining(task, mini(), task, seed, nsp=True) for task in TASKS for seed in seeds]


def run(runner) -> dict:
    records = runner.pretrain_all(plan(runner.budget, runner.seeds))
    rows = {}
    for task in TASKS:
        recs = records[task]
        first = recs[min(recs)]
        rows[task] = {**seed_rows(recs, ("mlm_acc", "nsp", "sop")),
                      "method": {t: first[t]["method"] for t in ("nsp", "sop")},
                      "examples": {t: first[t]["examples"] for t in ("nsp", "sop")},
                      "correct": {t: correct_rows(recs, t) for t in ("nsp", "sop")},
                      "nsp_groups": {g: [recs[s]["nsp"][g] for s in sorted(recs)]
                                     for g in ("negatives_other_novel", "negatives_same_novel", "positives")},
                      "train_seconds": [recs[s]["train_seconds"] for s in sorted(recs)],
                      "curve": recs[min(recs)]["curve"]}
    contrasts = {name: {"a": a, "b": b, "task": task,
                        **compare_paired(rows[a]["correct"][task], rows[b]["correct"][task])}
                 for name, (a, b, task) in CONTRASTS.items()}
    baselines = {task: sentence_baselines(task, runner.budget) for task in ("nsp", "sop")}
    return {"rows": rows, "contrasts": contrasts, "baselines": baselines,
            "paired_test": "McNemar's exact test on discordant pairs summed over seeds; paired bootstrap of the "
                           "accuracy difference (mean over seeds, 2,000 resamples of the held-out pairs)"}


def figure(result: dict):
    """One panel per evaluation task: each model's accuracy (mean and seeds), the paper's as markers, baselines."""
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    x = np.arange(len(rows))
    for ax, task in zip(axes, ("nsp", "sop")):
        plot_seed_cells(ax, [rows[t][task] for t in rows])
        ax.scatter(x, [TABLE5[t][task] for t in rows], marker="D", color="tab:red", label="paper, Table 5")
        base = result["baselines"][task]
        ax.axhline(100 * base["majority"], color="grey", ls="--", lw=1, label="majority label (chance)")
        ax.axhline(100 * base["overlap_stump"], color="tab:green", ls=":", lw=1.2,
                   label="word-overlap stump (no network)")
        ax.set(xticks=x, xticklabels=[f"trained with {t.upper()}\n({'own head' if t == task else 'linear probe'})"
                                          for t in rows], ylabel=f"held-out {task.upper()} "
               "accuracy (%)", title=f"Scored on {task.upper()} ({rows[next(iter(rows))]['examples'][task]} pairs)")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, -0.06))
    fig.suptitle(f"Sentence task (Table 5 analog): {setting(result)}")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def table(result: dict) -> str:
    out = ["### Sentence task (Table 5 analog)", "",
           "| trained with | MLM acc | NSP acc | SOP acc | paper: MLM / NSP / SOP |", "|---|---|---|---|---|"]
    for task, row in result["rows"].items():
        p = TABLE5[task]
        out.append(f"| {task} | {pm(row['mlm_acc'])} | {pm(row['nsp'])} | {pm(row['sop'])} | "
                   f"{p['mlm']} / {p['nsp']} / {p['sop']} |")
    base = result["baselines"]
    out += ["", "Mean ± sample std over seeds; the other task by a linear probe. No network: majority label "
            f"NSP {100 * base['nsp']['majority']:.1f}, SOP {100 * base['sop']['majority']:.1f}; word-overlap stump "
            f"NSP {100 * base['nsp']['overlap_stump']:.1f}, SOP {100 * base['sop']['overlap_stump']:.1f}.", "",
            "| paired comparison | A - B (points) | 95% bootstrap interval | only A / only B right | McNemar p |",
            "|---|---|---|---|---|"]
    for c in result["contrasts"].values():
        boot = c["bootstrap"]
        out.append(f"| {c['a']} vs {c['b']} on {c['task'].upper()} | {100 * boot['difference']:+.1f} | "
                   f"[{100 * boot['ci95'][0]:+.1f}, {100 * boot['ci95'][1]:+.1f}] | {c['only_a']} / {c['only_b']} | "
                   f"{c['mcnemar_p']:.3g} |")
    return "\n".join(out)
