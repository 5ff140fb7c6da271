"""Reading results: per-seed rows and their summaries, paired differences, Tables 3-4 rows, figures and markdown."""

from __future__ import annotations

import numpy as np

from ...study.stats import compare_paired, paired_by_seed, seed_summary
from ...tasks.scoring import constant_head
from .budget import Budget
from .measure import sentence_baselines


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
            versus = {key: paired_by_seed(recs, base, key) for key in ("mlm_loss", "mlm_acc")}
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
    """Three panels stacked over one x axis of model variants: held-out MLM loss and accuracy (mean ± std, seeds
    as dots) and the paper's Avg; stacked so that the book's column shows them at a readable size."""
    from ...study.figure_style import book_figure, book_style

    rows = result["rows"]
    labels = list(rows)
    x = np.arange(len(labels))
    fig, (ax_l, ax_m, ax_p) = book_figure(3, 1, height=9, sharex=True)
    with book_style():
        plot_seed_cells(ax_l, [rows[k]["mlm_loss"] for k in labels], scale=1)
        ax_l.set(ylabel="MLM loss (nats)\nlower is better")
        plot_seed_cells(ax_m, [rows[k]["mlm_acc"] for k in labels])
        ax_m.set(ylabel="MLM accuracy (%)")
        paper = [paper_row(rows[k]) for k in labels]
        ax_p.scatter([i for i, p in enumerate(paper) if p], [p[1] for p in paper if p], marker="D",
                     color="tab:red", label="paper: Avg of 5 fine-tuned tasks")
        ax_p.set(ylabel="paper's Avg score\n(ALBERT-base shape)")
        ax_p.set_xticks(x, [f"{k}\n{rows[k]['params'] / 1e6:.2f}M" for k in labels])
        for ax in (ax_l, ax_m, ax_p):
            ax.grid(axis="y", alpha=0.3)
            ax.set_xlim(-0.6, len(labels) - 0.4)
        handles = [h for ax in (ax_l, ax_p) for h in ax.get_legend_handles_labels()[0]]
        names = [n for ax in (ax_l, ax_p) for n in ax.get_legend_handles_labels()[1]]
        unique = dict(zip(names, handles))
        fig.legend(unique.values(), unique.keys(), loc="lower center", ncol=2, bbox_to_anchor=(0.5, 0.0))
        fig.suptitle(f"{title}\n{setting(result)}\nheld-out MLM; x: model and its parameters")
        fig.tight_layout(rect=(0, 0.04, 1, 1))
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
