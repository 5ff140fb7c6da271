"""Reading the time-to-quality results: held-out accuracy against training tokens and minutes, old recipe and new.

`figure` draws data/results/time_to_quality.json (two pretraining runs' held-out curves, written by
`albert-mini time-to-quality results`); `report` sums up a race of the two recipes in one process
(data/results/time_to_quality_15min.json, written by benchmarks/time_to_quality.py). Both files are made by the
harness (albert_mini.harness.research.time_to_quality); chapter 11 reads them with these.
"""

from __future__ import annotations

from pathlib import Path

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["figure", "report"]


def figure(results: dict):
    """Held-out MLM (left) and SOP accuracy (right) per run, against training tokens (top) and training minutes
    (bottom): the column's title names the measure, one legend below, so the book's column shows it readably."""
    from .figure_style import book_figure, book_style

    fig, axes = book_figure(2, 2, height=7.4, sharey="col")
    with book_style():
        for row, (axis, label, scale) in enumerate((("tokens", "training tokens (millions)", 1e6),
                                                    ("minutes", f"minutes ({results['machine']})", 1))):
            mlm, sop = axes[row]
            for name, run in results["runs"].items():
                points = [p for p in run["curve"] if p.get(axis) is not None]
                x = [p[axis] / scale for p in points]
                mlm.plot(x, [100 * p["mlm_acc"] for p in points], marker="o", ms=3,
                         label=f"{name}: {Path(run['dir']).name}")
                sop.plot(x, [100 * p["sentence_acc"] for p in points], marker="o", ms=3)
            sop.axhline(50, color="grey", ls=":", label="chance")
            for ax in (mlm, sop):
                ax.set_xlabel(label)
                ax.grid(alpha=0.3)
        axes[0, 0].set_title("held-out MLM accuracy (%)")
        axes[0, 1].set_title("held-out SOP accuracy (%)")
        handles, names = axes[0, 0].get_legend_handles_labels()
        more_handles, more_names = axes[0, 1].get_legend_handles_labels()
        fig.legend(handles + more_handles, names + more_names, loc="lower center", ncol=2,
                   bbox_to_anchor=(0.5, 0.0))
        fig.tight_layout(rect=(0, 0.6 / fig.get_figheight(), 1, 1))
    return fig


def report(result: dict) -> str:
    """The race's summary in a few lines."""
    s = result["summary"]
    if s is None:
        return "no evaluation finished"
    lines = [f"machine: {result['machine']}, {result['threads']} threads; each recipe trained "
             f"{s['old_minutes']:.2f} (old) and {s['new_minutes']:.2f} (new) minutes",
             f"held-out MLM: old {s['old_mlm']:.4f}, new {s['new_mlm']:.4f} (ratio new/old {s['mlm_ratio']:.2f})",
             f"held-out SOP: old {s['old_sop']:.4f}, new {s['new_sop']:.4f}"]
    if s["speedup"]:
        lines.append(f"new reaches old's final MLM after {s['new_minutes_to_old_final_mlm']:.2f} min: "
                     f"time-to-quality ratio {s['speedup']:.2f}x")
    else:
        lines.append("new did not reach old's final MLM within the budget")
    return "\n".join(lines)

