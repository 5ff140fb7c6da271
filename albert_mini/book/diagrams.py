"""Diagrams of ALBERT's ideas, drawn with matplotlib from real configs, text and masks (the chapters save them).

- `embedding_diagram`: BERT's V x H word table against ALBERT's V x E table and E x H projection (chapter 3);
- `sharing_diagram`: which stored layer each layer application runs, with groups and inner groups (chapter 4);
- `sentence_pair_diagram`: how NSP and SOP build their pairs from the same two segments (chapter 5);
- `masking_diagram`: the whole-word n-gram spans a `Masker` chose, and what the model sees instead (chapter 6);
- `albert_diagram` and `layer_norm_placement_diagram`: the whole model with its counts, post-LN vs pre-LN (chapter 1);
- `race_packing_diagram` and `squad_windows_diagram`: what RACE truncation keeps, SQuAD's windows (chapter 8).

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


# ------------------------------------------------------------------------------------------- chapter 1
def albert_diagram(config: AlbertConfig):
    """The whole ALBERT for pretraining, bottom to top: the V x E table, the E x H projection, one layer applied
    L times, and the MLM and SOP heads, each with its parameter count for `config` (closed_form_breakdown)."""
    from ..model.counting import closed_form_breakdown

    V, E, H, L = config.vocab_size, config.embedding_size, config.hidden_size, config.num_hidden_layers
    F, A = config.intermediate_size, config.num_attention_heads
    parts = closed_form_breakdown(config, heads=True)
    layer = parts["attention"] + parts["ffn"]
    stored = config.num_layer_modules * config.inner_group_num
    fig, ax = _figure(10, 9)
    left, width, count_x = 0.05, 0.55, 0.66

    def stage(y, h, text, count, color):
        _box(ax, left, y, width, h, text, color=color, fontsize=9.5)
        ax.text(count_x, y + h / 2, count, va="center", fontsize=9.5)

    def up(x, y0, y1, label=""):
        _arrow(ax, (x, y0), (x, y1))
        ax.text(x + 0.01, (y0 + y1) / 2, label, va="center", fontsize=8.5)

    ax.text(left + width / 2, 0.02, "token ids (T of them), each in 0 .. V - 1", ha="center", fontsize=9.5)
    up(left + width / 2, 0.05, 0.09)
    stage(0.09, 0.09, f"word table V x E = {V:,} x {E}\n+ positions and token types (E wide), LayerNorm",
          f"{parts['embeddings']:,} parameters", ORANGE)
    up(left + width / 2, 0.18, 0.22, "T x E")
    stage(0.22, 0.07, f"projection E x H = {E} x {H} (+ bias)", f"{parts['projection']:,}", GREEN)
    up(left + width / 2, 0.29, 0.33, "T x H")
    shared = "one layer, shared" if stored == 1 else f"{stored} stored layers"
    stage(0.33, 0.22, f"{shared}, applied L = {L} times:\nself-attention ({A} heads), add, LayerNorm\n"
          f"FFN H -> {F:,} -> H, add, LayerNorm", f"{layer:,}\n(attention {parts['attention']:,}\n"
          f"+ FFN {parts['ffn']:,})", BLUE)
    # the loop: the output of the layer goes back into it L - 1 times
    ax.annotate("", xy=(left - 0.005, 0.37), xytext=(left - 0.005, 0.51),
                arrowprops=dict(arrowstyle="->", lw=1.2, color="black", connectionstyle="arc3,rad=0.6"))
    ax.text(left - 0.05, 0.44, f"x {L}", ha="right", va="center", fontsize=11, weight="bold")
    up(left + width * 0.25, 0.55, 0.62, "every token")
    up(left + width * 0.75, 0.55, 0.62, "[CLS] only")
    _box(ax, left, 0.62, width * 0.48, 0.17, "MLM head\ndense H -> E, LayerNorm,\ndecoder E -> V\n"
         "(tied to the word table)", color=RED, fontsize=9)
    _box(ax, left + width * 0.52, 0.62, width * 0.48, 0.17, "pooler H x H, tanh\nSOP classifier H -> 2",
         color=RED, fontsize=9)
    ax.text(count_x, 0.705, f"MLM head {parts['mlm_head']:,}\npooler {parts['pooler']:,}\n"
            f"SOP classifier {parts['sentence_head']:,}", va="center", fontsize=9.5)
    ax.text(left + width * 0.24, 0.81, "which piece was masked?", ha="center", fontsize=9)
    ax.text(left + width * 0.76, 0.81, "are A and B in order?", ha="center", fontsize=9)
    total = count_parameters(config, heads=True)
    ax.text(0.0, 0.9, f"ALBERT for pretraining, V = {V:,}, E = {E}, H = {H}, L = {L}: {total:,} parameters",
            fontsize=11, weight="bold")
    ax.text(0.0, 0.865, f"(the encoder alone, with its pooler: {count_parameters(config):,})", fontsize=9.5)
    ax.set_xlim(-0.12, 1.0)
    ax.set_ylim(0, 0.93)
    return fig


def layer_norm_placement_diagram():
    """Post-LN (BERT, ALBERT) against pre-LN (GPT-2 and most later models): where the LayerNorms sit in a layer."""
    fig, axes = _figure(9, 6.2)
    ax = axes
    columns = [("post-LN: BERT and ALBERT", 0.0,
                [("attention", BLUE), ("add x", None), ("LayerNorm", GREEN), ("FFN", ORANGE), ("add", None),
                 ("LayerNorm", GREEN)]),
               ("pre-LN: GPT-2 and most later models", 0.52,
                [("LayerNorm", GREEN), ("attention", BLUE), ("add x", None), ("LayerNorm", GREEN),
                 ("FFN", ORANGE), ("add", None)])]
    for title, x, steps in columns:
        ax.text(x + 0.2, 0.96, title, ha="center", fontsize=10.5, weight="bold")
        ax.text(x + 0.2, 0.02, "x (the layer's input)", ha="center", fontsize=9)
        y, h, gap = 0.08, 0.09, 0.045
        for text, color in steps:
            if color is None:
                _box(ax, x + 0.12, y, 0.16, h, text, color=GREY, fontsize=9, text_color="black")
            else:
                _box(ax, x + 0.05, y, 0.3, h, text, color=color, fontsize=9.5)
            _arrow(ax, (x + 0.2, y - gap + 0.005), (x + 0.2, y - 0.003))
            y += h + gap
        ax.text(x + 0.2, y - gap + 0.03, "output", ha="center", fontsize=9)
    ax.text(0.0, -0.06, "Post-LN normalises the sum after each residual add, so the residual path itself is "
            "normalised;\npre-LN normalises only what enters each sub-layer, and the residual path runs through "
            "unchanged.", fontsize=9)
    ax.set_xlim(-0.02, 0.94)
    ax.set_ylim(-0.1, 1.0)
    return fig


# ------------------------------------------------------------------------------------------- chapter 8
def race_packing_diagram(passage_tokens: int, qa_tokens: int, max_length: int, max_qa_length: int):
    """One RACE row, `[CLS] passage [SEP] question+option [SEP]`, drawn to scale: which tokens the truncation
    keeps (the question+option's end, the passage's start) and which it drops, for the given lengths."""
    qa_kept = min(qa_tokens, max_qa_length)
    passage_kept = min(passage_tokens, max_length - 3 - qa_kept)
    fig, ax = _figure(12, 3.2)
    total = passage_tokens + qa_tokens + 3
    unit = 1.0 / total
    y, h = 0.5, 0.2
    x = 0.0
    pieces = [("[CLS]", 1, GREY, True), ("passage, kept", passage_kept, BLUE, True),
              ("passage, dropped", passage_tokens - passage_kept, BLUE, False), ("[SEP]", 1, GREY, True),
              ("question+option, dropped", qa_tokens - qa_kept, GREEN, False),
              ("question+option, kept", qa_kept, GREEN, True), ("[SEP]", 1, GREY, True)]
    for label, n, color, kept in pieces:
        if n <= 0:
            continue
        _box(ax, x, y, n * unit, h, "" if n < 6 else f"{n}", color=color, alpha=0.85 if kept else 0.2,
             fontsize=8, text_color="white" if kept else "black")
        if n >= 6:
            ax.text(x + n * unit / 2, y + h + 0.04 if kept else y - 0.08, label, ha="center", fontsize=8)
        x += n * unit
    ax.text(0, 0.92, f"A passage of {passage_tokens} tokens and a question+option of {qa_tokens}, packed into "
            f"max_length = {max_length} with max_qa_length = {max_qa_length}", fontsize=10, weight="bold")
    ax.text(0, 0.2, f"kept: [CLS] + the passage's first {passage_kept} + [SEP] + the question+option's last "
            f"{qa_kept} + [SEP] = {passage_kept + qa_kept + 3} tokens. Pale: dropped.", fontsize=9)
    ax.text(0, 0.06, "The option sits at the end of its text and is what is scored, so the end is kept; each "
            "option gets its own copy of the passage.", fontsize=9)
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(0, 1)
    return fig


def squad_windows_diagram(context_tokens: int, query_tokens: int, max_length: int, doc_stride: int,
                          answer: tuple[int, int] | None = None):
    """SQuAD's windows over a long context: each holds max_length - 3 - query tokens and starts doc_stride after
    the previous one (`albert_mini.tasks.features.window_starts`); the answer, if given, is marked in each."""
    from ..tasks.features import window_starts

    window = max_length - 3 - query_tokens
    starts = window_starts(context_tokens, window, doc_stride)
    fig, ax = _figure(12, 1.2 + 0.55 * len(starts))
    unit = 1.0 / context_tokens
    rows = len(starts) + 1
    row_h = 1.0 / (rows + 1)
    y = 1 - row_h * 1.2
    _box(ax, 0, y, 1.0, row_h * 0.6, f"context: {context_tokens} tokens", color=GREY, fontsize=9,
         text_color="black")
    if answer is not None:
        _box(ax, answer[0] * unit, y, (answer[1] - answer[0] + 1) * unit, row_h * 0.6, color=RED, alpha=0.9)
    for k, start in enumerate(starts):
        y = 1 - row_h * (k + 2.2)
        end = min(start + window, context_tokens)
        inside = answer is not None and start <= answer[0] and answer[1] < end
        target = "answer inside: its start and end" if inside else "target: [CLS] (no whole answer here)"
        label = f"window {k + 1}: tokens {start}-{end - 1}"
        wide = (end - start) * unit > 0.25
        _box(ax, start * unit, y, (end - start) * unit, row_h * 0.6, label if wide else "", color=BLUE,
             fontsize=8.5)
        if not wide:
            ax.text(start * unit - 0.01, y + row_h * 0.3, label, ha="right", va="center", fontsize=8.5)
        if answer is not None:
            ax.text(1.01, y + row_h * 0.3, target, va="center", fontsize=8.5)
            if inside:
                _box(ax, answer[0] * unit, y, (answer[1] - answer[0] + 1) * unit, row_h * 0.6, color=RED)
    ax.text(0, 1.02, f"max_length {max_length}, query {query_tokens} tokens: each window holds "
            f"{max_length} - 3 - {query_tokens} = {window} context tokens and starts {doc_stride} after the last",
            fontsize=9.5, weight="bold")
    ax.set_xlim(-0.01, 1.35)
    ax.set_ylim(0, 1.08)
    return fig
