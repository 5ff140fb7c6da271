"""Diagrams of ALBERT's ideas, drawn with matplotlib from real configs, text and masks (the chapters save them).

- `embedding_diagram`: BERT's V x H word table against ALBERT's V x E table and E x H projection (chapter 3);
- `sharing_diagram`: which stored layer each layer application runs, with groups and inner groups (chapter 4);
- `sentence_pair_diagram`: how NSP and SOP build their pairs from the same two segments (chapter 5);
- `masking_diagram`: the whole-word n-gram spans a `Masker` chose, and what the model sees instead (chapter 6).

Every number a diagram prints is computed from its arguments; nothing is typed in.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from ..model.config import AlbertConfig
from ..model.counting import count_parameters

BLUE, ORANGE, GREEN, GREY, RED = "#4c78a8", "#f58518", "#54a24b", "#bab0ac", "#e45756"


def _figure(width: float, height: float):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_axis_off()
    return fig, ax


def _box(ax, x, y, w, h, text="", color=BLUE, alpha=0.85, fontsize=9, text_color="white", **kwargs):
    """A filled rectangle with its lower-left corner at (x, y) and centred text."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="square,pad=0", facecolor=color,
                                edgecolor="black", linewidth=0.6, alpha=alpha))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, color=text_color, **kwargs)


def _arrow(ax, start, end, text=""):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", lw=1.2, color="black"))
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.03, text, ha="center", va="bottom", fontsize=8)


# ------------------------------------------------------------------------------------------- chapter 3
def embedding_diagram(config: AlbertConfig):
    """BERT's word table (V x H) next to ALBERT's (V x E, then an E x H projection) for `config`, with their
    parameter counts. Widths and the projection are drawn to scale; the height standing for V rows is not."""
    V, E, H = config.vocab_size, config.embedding_size, config.hidden_size
    bert_twin = config.replace(embedding_size=H, embedding_projection=False)
    fig, ax = _figure(12, 4.8)
    aspect = 12 / 4.8  # one x unit is this many y units long on the page
    unit = 0.26 / H  # x units per column: a row of width H is drawn 0.26 wide
    table_top, table_height, row_y = 0.82, 0.56, 0.5

    def matrix(x, width, label, count, color):
        _box(ax, x, table_top - table_height, width, table_height, color=color, alpha=0.8)
        _box(ax, x, row_y, width, 0.03, color="black", alpha=0.7)  # the row of one token
        ax.text(x + width / 2, table_top + 0.03, label, ha="center", fontsize=9)
        ax.text(x + width / 2, table_top - table_height - 0.07, count, ha="center", fontsize=10)

    ax.text(0.0, 0.99, f"BERT-style: E = H = {H}", fontsize=11, weight="bold", va="top")
    matrix(0.03, H * unit, f"word table, V x H = {V:,} x {H}", f"{V * H:,} parameters", ORANGE)
    ax.text(0.025, row_y + 0.015, "a token's row", ha="right", va="center", fontsize=8)

    x0 = 0.42
    ax.text(x0, 0.99, f"ALBERT: E = {E}, H = {H}", fontsize=11, weight="bold", va="top")
    matrix(x0, E * unit, f"V x E = {V:,} x {E}", f"{V * E:,}", BLUE)
    x1 = x0 + E * unit + 0.1
    _arrow(ax, (x0 + E * unit + 0.01, row_y + 0.015), (x1 - 0.01, row_y + 0.015), "times")
    height = E * unit * aspect  # the projection's E rows, to the same scale as its H columns
    _box(ax, x1, row_y + 0.015 - height / 2, H * unit, height, color=GREEN, alpha=0.8)
    ax.text(x1 + H * unit / 2, row_y + 0.015 + height / 2 + 0.03, f"projection, E x H = {E} x {H}", ha="center",
            fontsize=9)
    ax.text(x1 + H * unit / 2, table_top - table_height - 0.07, f"{E * H:,} (+ a bias of {H})", ha="center",
            fontsize=10)
    x2 = x1 + H * unit + 0.09
    _arrow(ax, (x1 + H * unit + 0.01, row_y + 0.015), (x2 - 0.01, row_y + 0.015))
    _box(ax, x2, row_y, H * unit, 0.03, color="black", alpha=0.7)
    ax.text(x2 + H * unit / 2, row_y + 0.06, f"the token's vector, width H = {H}", ha="center", fontsize=8)

    ax.text(0.5, 0.02, f"The whole encoder (count_parameters): {count_parameters(bert_twin):,} parameters with E = H, "
            f"{count_parameters(config):,} with E = {E}", ha="center", fontsize=10)
    ax.set_xlim(-0.12, 1.26)
    ax.set_ylim(0, 1)
    return fig


# ------------------------------------------------------------------------------------------- chapter 4
def sharing_diagram(configs: Mapping[str, AlbertConfig]):
    """One column per config: its L x K layer steps bottom to top, each coloured by the stored layer it runs
    (inner layer k of group g is stored layer g * K + k), with the stored layers drawn beside the column."""
    import matplotlib.pyplot as plt

    columns = list(configs.items())
    steps = max(c.num_hidden_layers * c.inner_group_num for _, c in columns)
    fig, axes = plt.subplots(1, len(columns), figsize=(3.6 * len(columns), 0.42 * steps + 1.8))
    axes = [axes] if len(columns) == 1 else list(axes)
    colors = plt.get_cmap("tab20").colors
    for ax, (label, config) in zip(axes, columns):
        L, K = config.num_hidden_layers, config.inner_group_num
        stored = config.num_layer_modules * K
        ax.set_axis_off()
        ax.set_xlim(0, 1)
        ax.set_ylim(-1.2, steps + 0.8)
        for step in range(L * K):
            application, inner = divmod(step, K)
            layer = config.layer_to_group(application) * K + inner
            _box(ax, 0.05, step, 0.42, 0.8, f"application {application + 1}" + (f", inner {inner}" if K > 1 else ""),
                 color=colors[layer % len(colors)], fontsize=7, text_color="black")
            ax.text(0.5, step + 0.4, f"-> layer {layer}", va="center", fontsize=7)
        for layer in range(stored):
            y = (L * K - stored) / 2 + layer
            _box(ax, 0.78, y, 0.18, 0.8, f"{layer}", color=colors[layer % len(colors)], fontsize=8, text_color="black")
        ax.text(0.87, (L * K + stored) / 2 + 0.2, "stored", ha="center", fontsize=8)
        ax.text(0.5, -0.9, f"{label}\nL = {L}, G = {config.num_layer_modules}, K = {K}: {L * K} steps, "
                f"{stored} stored layer{'s' if stored > 1 else ''}", ha="center", fontsize=9)
    fig.suptitle("Which stored layer each layer step runs (input at the bottom)", fontsize=11)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------- chapter 5
def _snippet(text: str, words: int) -> str:
    chosen = text.split()
    return " ".join(chosen[:words]) + (" ..." if len(chosen) > words else "")


def sentence_pair_diagram(segment_a: str, segment_b: str, other: str, sources: Mapping[str, str] | None = None,
                          words: int = 14):
    """The three kinds of pair built from two consecutive segments A, B and a segment from another document:
    the positive both tasks share, SOP's negative (B, A) and NSP's negative (A, other)."""
    sources = dict(sources or {})
    fig, ax = _figure(12, 5.2)
    rows = [("A and B in text order", "NSP label 0 and SOP label 0", (("A", segment_a, BLUE), ("B", segment_b, GREEN))),
            ("SOP negative: the same two segments swapped", "SOP label 1", (("B", segment_b, GREEN),
                                                                           ("A", segment_a, BLUE))),
            ("NSP negative: B replaced by text from another document", "NSP label 1",
             (("A", segment_a, BLUE), ("C", other, RED)))]
    for row, (title, label, parts) in enumerate(rows):
        y = 0.68 - row * 0.31
        ax.text(0.0, y + 0.21, title, fontsize=10, weight="bold")
        ax.text(1.0, y + 0.21, label, fontsize=10, ha="right", color="black")
        x = 0.0
        _box(ax, x, y, 0.05, 0.16, "[CLS]", color=GREY, fontsize=8, text_color="black")
        x += 0.055
        for name, text, color in parts:
            wrapped = textwrap.fill(_snippet(text, words), 52)
            caption = f"{name}" + (f" ({sources[name]})" if name in sources else "")
            _box(ax, x, y, 0.4, 0.16, wrapped, color=color, alpha=0.25, fontsize=7.5, text_color="black")
            ax.text(x + 0.005, y + 0.165, caption, fontsize=8, va="bottom", color="black", style="italic")
            x += 0.405
            _box(ax, x, y, 0.05, 0.16, "[SEP]", color=GREY, fontsize=8, text_color="black")
            x += 0.055
    ax.text(0.0, -0.02, "Token types: 0 for [CLS], the first segment and its [SEP]; 1 for the second segment and "
            "the last [SEP]. SOP's two orders contain the same words; NSP's negative brings new ones.", fontsize=8)
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.05, 1.0)
    return fig


# ------------------------------------------------------------------------------------------- chapter 6
def masking_diagram(pieces: Sequence[str], word_ids: Sequence[int], spans, shown: Sequence[str],
                    per_line: int = 12):
    """Pieces grouped into words, the chosen spans (each a run of whole words, marked with its length n), and
    below each piece what the model is given: [MASK] (grey), a random piece (orange) or the piece itself (green).

    `spans` are objects with start, end (token positions, end exclusive) and n (words kept), as `Masker` returns.
    """
    inside = {}
    for span in spans:
        for i in range(span.start, span.end):
            inside[i] = span
    lines = [list(range(i, min(i + per_line, len(pieces)))) for i in range(0, len(pieces), per_line)]
    fig, ax = _figure(13, 1.55 * len(lines) + 0.8)
    width, gap = 1.0 / per_line, 0.012
    for line_number, positions in enumerate(lines):
        y = len(lines) - line_number - 0.45
        for column, i in enumerate(positions):
            new_word = i == 0 or word_ids[i] != word_ids[i - 1] or word_ids[i] < 0
            x = column * width + (gap if new_word else 0)  # a piece that continues a word touches it
            w = (column + 1) * width - x
            span = inside.get(i)
            size = 7.5 if len(pieces[i]) <= 7 else 6  # long pieces in smaller type, to fit their box
            _box(ax, x, y, w, 0.3, pieces[i], color=BLUE if span else GREY, alpha=0.9 if span else 0.35,
                 fontsize=size, text_color="white" if span else "black")
            if span is not None:
                kind = "mask" if shown[i] == "[MASK]" else ("kept" if shown[i] == pieces[i] else "random")
                color = {"mask": GREY, "kept": GREEN, "random": ORANGE}[kind]
                _box(ax, x, y - 0.36, w, 0.3, shown[i], color=color, alpha=0.9,
                     fontsize=7.5 if len(shown[i]) <= 7 else 6, text_color="black")
                if i == span.start:
                    ax.text(x, y + 0.34, f"n = {span.n}", fontsize=7, color=BLUE)
    ax.text(0, -0.25, "Blue: pieces chosen for prediction (whole words, in n-gram spans). Below them, the model input: "
            "[MASK] (grey), a random piece (orange) or the piece unchanged (green). Word boundaries are the small "
            "gaps.", fontsize=8)
    ax.set_xlim(-0.005, 1.005)
    ax.set_ylim(-0.4, len(lines))
    return fig
