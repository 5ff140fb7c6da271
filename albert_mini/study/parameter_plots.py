"""Total parameters against the embedding size E, for the unshared and the all-shared model of one shape."""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral

from ..model.config import AlbertConfig, as_config, embedding_variant
from ..model.counting import count_parameters
from .paper import TABLE3

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["plot_parameters_vs_embedding"]

DEFAULT_SIZES = (16, 32, 64, 128, 256, 512, 768, 1024, 2048, 4096)
CURVES = {"none": ("not shared", "tab:orange"), "all": ("all shared", "tab:blue")}  # sharing -> (name, colour)
_SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "max_position_embeddings", "type_vocab_size")


def plot_parameters_vs_embedding(base: str | AlbertConfig = "albert-base", sizes: Iterable[int] = DEFAULT_SIZES,
                                 ax=None, mark_paper: bool = True):
    """Total parameters (millions) against E (log2 axis) for sharing='none' and 'all'; returns the Figure.

    Curves are exact counts (count_parameters: pooler included, no pretraining heads). For the ALBERT-base
    shape the paper's Table 3 counts are marked as printed (they follow the paper's counting convention).
    Text is in the book's sizes (figure_style), also on an `ax` of the caller's figure.
    """
    from matplotlib.ticker import ScalarFormatter

    from .figure_style import FONT_PT, TITLE_PT, book_figure

    config = as_config(base)
    sizes = _checked_sizes(sizes)  # before any figure exists, so bad input leaves nothing behind
    if ax is None:
        _, ax = book_figure(height=5.2)
    for sharing, (label, color) in CURVES.items():
        millions = [count_parameters(embedding_variant(config, E, sharing)) / 1e6 for E in sizes]
        ax.plot(sizes, millions, color=color, label=f"{label} (sharing={sharing!r})", gid=f"curve-{sharing}")
    if mark_paper and _has_albert_base_shape(config):
        for sharing, (label, color) in CURVES.items():
            points = sorted((E, params) for (s, E), (params, _avg) in TABLE3.items() if s == sharing)
            ax.scatter([E for E, _ in points], [p for _, p in points], color=color, marker="o", facecolors="none",
                       s=60, zorder=3, label=f"paper Table 3, {label} (as printed)", gid=f"paper-{sharing}")
    name = base if isinstance(base, str) else "custom config"
    ax.axvline(config.embedding_size, color="gray", ls=":", label=f"E = {config.embedding_size} ({name})")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())  # 128, not 2^7: E is read as a width
    ax.set_ylim(bottom=0)  # counts compare honestly only against a zero baseline
    ax.set_xlabel("embedding size E (log2 scale)", fontsize=FONT_PT)
    ax.set_ylabel("total parameters (millions)", fontsize=FONT_PT)
    ax.set_title(f"{name} shape: total parameters vs E\n(V = {config.vocab_size:,}, H = {config.hidden_size}, "
                 f"L = {config.num_hidden_layers})", fontsize=TITLE_PT)
    ax.tick_params(labelsize=FONT_PT)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=FONT_PT)
    return ax.figure


def _checked_sizes(sizes: Iterable[int]) -> list[int]:
    sizes = list(sizes)
    if not sizes:
        raise ValueError("plot_parameters_vs_embedding got no embedding sizes; pass e.g. sizes=(64, 128, 256, 768)")
    for E in sizes:
        if isinstance(E, bool) or not isinstance(E, Integral) or E <= 0:
            raise ValueError(f"embedding size E must be a positive integer, got {E!r} in sizes; remove it "
                             f"(E is the width of the token embeddings, at least 1)")
    return sorted({int(E) for E in sizes})  # a line plot needs increasing x


def _has_albert_base_shape(config: AlbertConfig) -> bool:
    reference = AlbertConfig.from_preset("albert-base")
    return all(getattr(config, field) == getattr(reference, field) for field in _SHAPE_FIELDS)
