"""Figure 1 analog: how much each layer changes its input, albert-mini vs the same shape with nothing shared.

The twin differs from albert-mini only in sharing (same E = 128, same H = 256), so the comparison isolates what
the paper's Figure 1 is about; bert-mini (E = H, not shared) is a third line. Each model is measured after
pretraining and at initialisation (the encoder the pretraining run started from), once per seed.
"""

from __future__ import annotations

import numpy as np

from ...model.config import AlbertConfig
from .budget import Budget, mini, variant
from .measure import Pretraining
from .tables import setting

MODELS = {"albert-mini (shared)": lambda: mini(),
          "same shape, not shared": lambda: variant("none", mini().embedding_size),
          "bert-mini (E = H, not shared)": lambda: AlbertConfig.from_preset("bert-mini")}
METRICS = ("l2", "degrees")


def plan(budget: Budget, seeds) -> list[Pretraining]:
    return [Pretraining(label, config(), "sop", seed) for label, config in MODELS.items() for seed in seeds]


def per_layer(entries: list[dict], metric: str) -> dict:
    """Per-layer mean and sample std over seeds of one metric, with the raw values (seeds x layers)."""
    values = np.array([e[metric] for e in entries])  # (seeds, layers)
    std = values.std(0, ddof=1).tolist() if len(values) > 1 else None
    return {"mean": values.mean(0).tolist(), "std": std, "values": values.tolist()}


def run(runner) -> dict:
    records = runner.pretrain_all(plan(runner.budget, runner.seeds))
    models = {}
    for label, recs in records.items():
        models[label] = {state: {m: per_layer([recs[s][key] for s in sorted(recs)], m) for m in METRICS}
                         for state, key in (("trained", "smoothness"), ("init", "smoothness_init"))}
        models[label]["tokens"] = recs[min(recs)]["smoothness"]["tokens"]
    return {"models": models, "classroom_model": classroom_smoothness(runner.budget),
            "reading": "per token, averaged over every non-pad token of the held-out batches; h_0 is the embedding "
                       "after the E -> H projection (albert_mini/study/smoothness.py)"}


def classroom_smoothness(budget: Budget) -> dict:
    """The same measurement on the shipped classroom model (20.5M + 8.2M tokens), for the claim's wording."""
    import json

    from ...paths import PRETRAINED_MODEL
    from ...study.smoothness import layer_smoothness
    from ...training.checkpoint import load_pretrained
    from .data import held_out_batches

    manifest = json.loads((PRETRAINED_MODEL / "manifest.json").read_text())
    measured = layer_smoothness(load_pretrained(PRETRAINED_MODEL).albert, held_out_batches(budget))
    return {"l2": measured.l2, "degrees": measured.degrees, "tokens": measured.tokens,
            "step": manifest["step"], "sha256": manifest["sha256"]["model.safetensors"]}


def figure(result: dict):
    """Figure 1's two panels, stacked: trained (solid, band = mean ± std over seeds) and at initialisation
    (dotted), one legend below them."""
    from ...study.figure_style import book_figure, book_style

    fig, axes = book_figure(2, 1, height=9.2, sharex=True)
    colours = dict(zip(result["models"], ("tab:blue", "tab:orange", "tab:grey")))
    names = ("L2 distance\n(mean over tokens)", "angle in degrees\n(mean over tokens)")
    with book_style():
        for ax, metric, name in zip(axes, METRICS, names):
            for label, model in result["models"].items():
                for state, style in (("trained", "-"), ("init", ":")):
                    entry = model[state][metric]
                    layers = np.arange(1, len(entry["mean"]) + 1)
                    mean = np.array(entry["mean"])
                    ax.plot(layers, mean, style, marker="o" if state == "trained" else None, color=colours[label],
                            label=f"{label}, {'trained' if state == 'trained' else 'at initialisation'}")
                    if entry["std"] is not None:
                        std = np.array(entry["std"])
                        ax.fill_between(layers, mean - std, mean + std, color=colours[label], alpha=0.2, lw=0)
            classroom = result.get("classroom_model")
            if classroom:
                ax.plot(layers, classroom[metric], "--", marker="s", color="black",
                        label=f"classroom model ({classroom['step']:,} steps, 28.7M tokens)")
            ax.set(ylabel=name, xticks=layers)
            ax.grid(alpha=0.3)
        axes[-1].set(xlabel="layer")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.0))
        fig.suptitle(f"Layer input vs output, held-out Austen\n(Figure 1 analog, 6 layers): {setting(result)}")
        fig.tight_layout(rect=(0, 0.2, 1, 1))
    return fig


def table(result: dict) -> str:
    out = ["### Smoothness (Figure 1 analog): angle in degrees per layer, mean ± std over seeds", "",
           "| model | " + " | ".join(f"layer {i + 1}" for i in range(len(next(iter(result["models"].values()))
                                                                          ["trained"]["degrees"]["mean"]))) + " |"]
    out.append("|---" * (len(out[-1].split("|")) - 2) + "|")
    for label, model in result["models"].items():
        for state in ("trained", "init"):
            entry = model[state]["degrees"]
            cells = [f"{m:.1f}" + (f" ± {s:.1f}" if entry["std"] else "")
                     for m, s in zip(entry["mean"], entry["std"] or entry["mean"])]
            out.append(f"| {label}, {state} | " + " | ".join(cells) + " |")
    return "\n".join(out)
