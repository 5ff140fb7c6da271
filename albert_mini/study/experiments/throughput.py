"""Table 2's Speedup column: training speed of the seven paper configs on this CPU, relative to BERT-large."""

from __future__ import annotations

import numpy as np

from ..paper import TABLE2_SPEEDUP
from ..throughput import relative_throughput
from .common import FAST, Budget

PAPER_MODELS = ["bert-base", "bert-large", "bert-xlarge", "albert-base", "albert-large", "albert-xlarge",
                "albert-xxlarge"]


def run(budget: Budget) -> dict:
    if budget == FAST:  # two small configs, one tiny step: the machinery, not the numbers
        names = ["bert-base", "albert-base"]
        measured = relative_throughput(names, reference="bert-base", batch_size=1, seq_len=16, steps=1)
    else:
        names = PAPER_MODELS
        measured = relative_throughput(names, reference="bert-large", batch_size=2, seq_len=64, steps=3)
    return {"rows": {n: {**measured[n], "paper_speedup": TABLE2_SPEEDUP.get(n)} for n in names},
            "setting": "forward + backward of AlbertModel, no optimizer, fp32"}


def figure(result: dict):
    """Measured speed, the paper's and the FLOP-predicted ratio per model, on a log axis."""
    import matplotlib.pyplot as plt

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


def table(result: dict) -> str:
    out = ["### Training throughput relative to BERT-large (Table 2's Speedup column)", "",
           "| model | tokens/s here | speedup here | FLOP ratio | paper |", "|---|---|---|---|---|"]
    for name, row in result["rows"].items():
        paper = row["paper_speedup"] if row["paper_speedup"] is not None else "-"
        out.append(f"| {name} | {row['tokens_per_second']:.0f} | {row['speedup']:.2f} | {row['flop_ratio']:.2f} | "
                   f"{paper} |")
    return "\n".join(out)
