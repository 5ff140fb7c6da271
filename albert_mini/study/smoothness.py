"""Measurements the paper plots: how much each layer changes its input (Figure 1)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..model.albert import AlbertModel

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["layer_distances", "layer_smoothness", "plot_smoothness"]


@dataclass
class Smoothness:
    """Per-layer mean L2 distance and mean angle (degrees) between a layer's input and output embeddings."""

    l2: list[float]  # l2[l] for layer l + 1, l = 0..L-1
    degrees: list[float]
    tokens: int  # how many (non-pad) tokens were averaged


def layer_distances(h_in: torch.Tensor, h_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token L2 distance ||out - in|| and angle arccos(cos(in, out)) in degrees; inputs (..., H)."""
    l2 = (h_out - h_in).norm(dim=-1)
    # 2 atan2(|u - v|, |u + v|) for unit vectors u, v equals arccos(u . v) but stays exact near 0 and 180 degrees.
    u = h_in / h_in.norm(dim=-1, keepdim=True)
    v = h_out / h_out.norm(dim=-1, keepdim=True)
    angle = 2 * torch.atan2((u - v).norm(dim=-1), (u + v).norm(dim=-1))
    return l2, torch.rad2deg(angle)


@torch.no_grad()
def layer_smoothness(model: AlbertModel, batches) -> Smoothness:
    """Figure 1's measurement: for each layer, L2 distance and angle between its input and output, per token.

    Our reading of the paper (which does not state its averaging): h_0 is the embedding after the E -> H
    projection, layer l maps h_{l-1} to h_l; both metrics are computed per token and averaged over every
    non-pad token of `batches` (an iterable of dicts with input_ids, attention_mask and optionally
    token_type_ids). The model runs in eval mode.
    """
    was_training = model.training
    model.eval()
    sums_l2 = sums_deg = None
    tokens = 0
    for batch in batches:
        mask = batch.get("attention_mask")
        ids = batch["input_ids"]
        keep = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()  # (B, T)
        out = model(ids, attention_mask=mask, token_type_ids=batch.get("token_type_ids"), output_hidden_states=True)
        states = out.hidden_states
        l2s, degs = zip(*(layer_distances(states[i], states[i + 1]) for i in range(len(states) - 1)))
        layer_l2 = torch.stack([x[keep].sum() for x in l2s]).double()
        layer_deg = torch.stack([x[keep].sum() for x in degs]).double()
        sums_l2 = layer_l2 if sums_l2 is None else sums_l2 + layer_l2
        sums_deg = layer_deg if sums_deg is None else sums_deg + layer_deg
        tokens += int(keep.sum())
    model.train(was_training)
    if not tokens:
        raise ValueError("layer_smoothness got no tokens: pass at least one batch with a non-pad token")
    return Smoothness((sums_l2 / tokens).tolist(), (sums_deg / tokens).tolist(), tokens)


def plot_smoothness(results: dict[str, Smoothness], title: str = "Layer input vs output"):
    """Two panels as in the paper's Figure 1, stacked: L2 distance and angle per layer, one line per model."""
    import textwrap

    from .figure_style import CHARS, book_figure, book_style

    fig, (ax_l2, ax_deg) = book_figure(2, 1, height=7.5, sharex=True)
    with book_style():
        for label, result in results.items():
            layers = range(1, len(result.l2) + 1)
            ax_l2.plot(layers, result.l2, marker="o", label=label)
            ax_deg.plot(layers, result.degrees, marker="o", label=label)
        ax_l2.set(ylabel="L2 distance\n(mean over tokens)", title="L2 distance")
        ax_deg.set(xlabel="layer", ylabel="angle in degrees\n(mean over tokens)", title="Cosine similarity as an angle")
        for ax in (ax_l2, ax_deg):
            ax.grid(alpha=0.3)
            ax.legend()
        fig.suptitle(textwrap.fill(title, CHARS - 8))  # title type is a point larger
        fig.tight_layout()
    return fig


