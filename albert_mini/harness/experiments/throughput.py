"""Table 2's Speedup column: training speed of the seven paper configs on this CPU, relative to BERT-large."""

from __future__ import annotations

import numpy as np

from ...study.paper import TABLE2_SPEEDUP
from ...study.throughput import relative_throughput
from .budget import FAST

PAPER_MODELS = ["bert-base", "bert-large", "bert-xlarge", "albert-base", "albert-large", "albert-xlarge",
                "albert-xxlarge"]


def run(runner) -> dict:
    """Speeds are measured once (medians of repeated steps inside); seeds do not apply to a timing."""
    if runner.budget == FAST:  # two small configs, one tiny step: the machinery, not the numbers
        names = ["bert-base", "albert-base"]
        measured = relative_throughput(names, reference="bert-base", batch_size=1, seq_len=16, steps=1)
    else:
        names = PAPER_MODELS
        measured = relative_throughput(names, reference="bert-large", batch_size=2, seq_len=64, steps=3)
    return {"rows": {n: {**measured[n], "paper_speedup": TABLE2_SPEEDUP.get(n)} for n in names},
            "setting": "forward + backward of AlbertModel, no optimizer, fp32"}


def figure(result: dict):
    """Measured speed, the paper's and the FLOP-predicted ratio per model, as horizontal bars on a log axis (the
    model names read level, the legend below: the book's column shows it at a readable size)."""
    import matplotlib.pyplot as plt

    from ...study.figure_style import book_figure, book_style

    rows = result["rows"]
    names = list(rows)
    fig, ax = book_figure(height=0.45 * len(names) + 2.4)
    with book_style():
        y = np.arange(len(names))
        ax.barh(y, [rows[n]["speedup"] for n in names], 0.5, color="tab:blue",
                label=f"measured here ({result['meta'].get('cpu') or 'CPU'}, fp32)")
        paper = [(i, rows[n]["paper_speedup"]) for i, n in enumerate(names) if rows[n]["paper_speedup"] is not None]
        ax.scatter([v for _, v in paper], [i for i, _ in paper], marker="D", color="tab:red", zorder=3,
                   label="paper, Table 2 (TPU)")
        ax.scatter([rows[n]["flop_ratio"] for n in names], y, marker="|", s=400, color="black", zorder=3,
                   label="FLOP ratio")
        ax.axvline(1, color="grey", lw=0.8)
        ax.set_yticks(y, names)
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set(xlabel="speed relative to BERT-large (log scale)", xscale="log")
        ticks = [t for t in (0.1, 0.2, 0.3, 0.5, 1, 2, 3, 5, 10) if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.grid(axis="x", alpha=0.3)
        ax.set_title("Training throughput relative to BERT-large")
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: not labels[i].startswith("measured"))  # the bars first
        fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="lower center", ncol=2,
                   bbox_to_anchor=(0.5, 0.0))
        fig.tight_layout(rect=(0, 0.11, 1, 1))
    return fig


def table(result: dict) -> str:
    out = ["### Training throughput relative to BERT-large (Table 2's Speedup column)", "",
           "| model | tokens/s here | speedup here | FLOP ratio | paper |", "|---|---|---|---|---|"]
    for name, row in result["rows"].items():
        paper = row["paper_speedup"] if row["paper_speedup"] is not None else "-"
        out.append(f"| {name} | {row['tokens_per_second']:.0f} | {row['speedup']:.2f} | {row['flop_ratio']:.2f} | "
                   f"{paper} |")
    return "\n".join(out)
