"""What sharing saves: training memory of the mini presets (computed and measured) and of three paper configs."""

from __future__ import annotations

import torch

from ...model.albert import AlbertForPreTraining
from ...model.config import AlbertConfig
from ...study.memory import measure_activation_bytes, training_memory
from .data import held_out_batches

MIB = 2**20


def run(runner) -> dict:
    """Computed and measured once: memory does not depend on the seed."""
    setup, rows = runner.budget.setup(), {}
    batch = held_out_batches(runner.budget, count=1)[0]  # real, padded
    for name in ("albert-mini", "bert-mini"):
        config = AlbertConfig.from_preset(name)
        report = training_memory(config, setup.batch_size, setup.seq_len)
        torch.manual_seed(0)
        measured = measure_activation_bytes(AlbertForPreTraining(config).train(), batch)
        rows[name] = {**report.as_dict(), "activations_measured_padded_batch": measured}
    for name in ("bert-large", "albert-large", "albert-xxlarge"):
        rows[name] = training_memory(AlbertConfig.from_preset(name), 8, 512).as_dict()
    return {"rows": rows, "batch": {"mini": [setup.batch_size, setup.seq_len], "paper_configs": [8, 512]}}


def figure(result: dict):
    """Stacked bars per model: weights, gradients and optimizer states (what sharing cuts) under activations; the
    mini and the paper-sized models in two panels, one above the other, so the book's column shows them readably."""
    from ...study.figure_style import book_figure, book_style

    rows = result["rows"]
    mini_batch, paper_batch = result["batch"]["mini"], result["batch"]["paper_configs"]
    fig, axes = book_figure(2, 1, height=7)
    with book_style():
        for ax, names, unit, scale, batch in (
                (axes[0], ["albert-mini", "bert-mini"], "MiB", MIB, mini_batch),
                (axes[1], ["bert-large", "albert-large", "albert-xxlarge"], "GiB", 2**30, paper_batch)):
            bottom = [0.0] * len(names)
            for part in ("parameters", "gradients", "optimizer_states", "activations"):
                heights = [rows[n][part] / scale for n in names]
                ax.bar(names, heights, bottom=bottom, label=part.replace("_", " "))
                bottom = [b + h for b, h in zip(bottom, heights)]
            ax.set(ylabel=f"one fp32 step ({unit})")
            ax.set_title(f"batch {batch[0]} x {batch[1]}", loc="left")
            ax.grid(axis="y", alpha=0.3)
        fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, bbox_to_anchor=(0.5, 0.0))
        fig.suptitle("Training memory with LAMB: sharing cuts weights, gradients\n"
                     "and optimizer states, not activations")
        fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def table(result: dict) -> str:
    out = ["### Training memory (fp32, LAMB)", "", "| model | weights + grads + optimizer (MiB) | activations (MiB) |",
           "|---|---|---|"]
    for name, row in result["rows"].items():
        fixed = row["parameters"] + row["gradients"] + row["optimizer_states"]
        out.append(f"| {name} | {fixed / MIB:.1f} | {row['activations'] / MIB:.1f} |")
    return "\n".join(out)
