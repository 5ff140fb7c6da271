"""Table 5 analog: pretrain with no sentence task, NSP or SOP; score every model on MLM, NSP and SOP."""

from __future__ import annotations

import numpy as np

from ..paper import TABLE5
from .common import Budget, mini, mlm_accuracy, pct, pretrain, sentence_accuracy, setting


def run(budget: Budget) -> dict:
    """One model per row of the paper's Table 5 (each a registered sentence task), scored on NSP and SOP."""
    rows = {}
    for task in TABLE5:
        model, record = pretrain(mini(), task, budget)
        rows[task] = {"mlm_acc": mlm_accuracy(record), "train_seconds": record["seconds"],
                      "nsp": sentence_accuracy(model, "nsp", task, budget),
                      "sop": sentence_accuracy(model, "sop", task, budget), "curve": record["curve"]}
    return {"rows": rows}


def figure(result: dict):
    """Grouped bars: held-out MLM, NSP and SOP accuracy of each model."""
    import matplotlib.pyplot as plt

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
           title=f"Sentence task (Table 5 analog)\n{setting(result)}")
    ax.legend(fontsize=8)
    return fig


def table(result: dict) -> str:
    out = ["### Sentence task (Table 5 analog)", "",
           "| trained with | MLM acc | NSP acc | SOP acc | paper: MLM / NSP / SOP |", "|---|---|---|---|---|"]
    for task, row in result["rows"].items():
        p = TABLE5[task]
        out.append(f"| {task} | {pct(row['mlm_acc'])} | {pct(row['nsp']['accuracy'])} | "
                   f"{pct(row['sop']['accuracy'])} | {p['mlm']} / {p['nsp']} / {p['sop']} |")
    nsp = result["rows"]["nsp"]["nsp"]
    if "negatives_other_novel" in nsp:
        other, same, positives = nsp["negatives_other_novel"], nsp["negatives_same_novel"], nsp["positives"]
        out += ["", f"NSP-trained model on NSP negatives from another novel: {pct(other['accuracy'])}% "
                    f"({other['examples']}), from the same novel: {pct(same['accuracy'])}% ({same['examples']}), "
                    f"true next: {pct(positives['accuracy'])}% ({positives['examples']})."]
    return "\n".join(out)
