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
from ..study.figure_style import CHARS, FONT_PT, TITLE_PT, WIDTH_IN, book_style

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["albert_diagram", "embedding_diagram", "layer_norm_placement_diagram", "masking_diagram", "pieces_diagram",
           "race_packing_diagram", "sentence_pair_diagram", "sharing_diagram", "squad_windows_diagram"]

BLUE, ORANGE, GREEN, GREY, RED = "#4c78a8", "#f58518", "#54a24b", "#bab0ac", "#e45756"
LINE_IN = 0.22  # one line of FONT_PT text, with its leading, in inches
PAGE_IN = WIDTH_IN - 0.2  # what savefig's 0.1-inch pad on each side leaves of the column


def _figure(width: float, height: float):
    import matplotlib.pyplot as plt

    with book_style():
        fig, ax = plt.subplots(figsize=(width, height))
    ax.set_axis_off()
    return fig, ax


def _canvas(width: float, height: float):
    """A figure whose one axes fills it, in inches: (0, 0) is the bottom left corner, (width, height) the top right;
    laying out in inches keeps text, which has a size in points, in step with the boxes around it."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    return fig, ax


def _text_width(text: str, size: float = FONT_PT) -> float:
    """Width in inches of one line of `text` at `size` pt in matplotlib's default font."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, _height, _descent = TextToPath().get_text_width_height_descent(text, FontProperties(size=size), False)
    return width / 72


def _flow(widths: Sequence[float], gaps: Sequence[float], line_width: float) -> list[list[int]]:
    """Break items of `widths` (each after its gap `gaps[i]`) into lines no wider than `line_width`, in order."""
    lines, used = [[]], 0.0
    for i, width in enumerate(widths):
        if lines[-1] and used + gaps[i] + width > line_width:
            lines.append([])
            used = 0.0
        used += (gaps[i] if lines[-1] else 0.0) + width
        lines[-1].append(i)
    return lines


def _box(ax, x, y, w, h, text="", color=BLUE, alpha=0.85, fontsize=FONT_PT, text_color="white", **kwargs):
    """A filled rectangle with its lower-left corner at (x, y) and centred text; returns the text (or None)."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="square,pad=0", facecolor=color,
                                edgecolor="black", linewidth=0.6, alpha=alpha))
    if text:
        return ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, color=text_color,
                       **kwargs)
    return None


def _arrow(ax, start, end, text="", above=0.03):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", lw=1.2, color="black"))
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + above, text, ha="center", va="bottom",
                fontsize=FONT_PT)


# ------------------------------------------------------------------------------------------- chapter 3
def embedding_diagram(config: AlbertConfig):
    """BERT's word table (V x H) above ALBERT's (V x E, then an E x H projection) for `config`, with their
    parameter counts. Widths and the projection are drawn to scale; the height standing for V rows is not."""
    V, E, H = config.vocab_size, config.embedding_size, config.hidden_size
    bert_twin = config.replace(embedding_size=H, embedding_projection=False)
    fig, ax = _canvas(PAGE_IN, 6.9)
    unit = 1.7 / H  # inches per column: a row of width H is drawn 1.7 inches wide
    left, table_height, row = 1.5, 1.6, 0.55  # the row of one token sits `row` below the table's top

    def matrix(top, width, label, count, color):
        _box(ax, left, top - table_height, width, table_height, color=color, alpha=0.8)
        _box(ax, left, top - row, width, 0.07, color="black", alpha=0.7)  # the row of one token
        ax.text(left + width / 2, top + 0.08, label, ha="center", fontsize=FONT_PT)
        ax.text(left + width / 2, top - table_height - 0.3, count, ha="center", fontsize=FONT_PT)
        ax.text(left - 0.1, top - row + 0.035, "a token's row", ha="right", va="center", fontsize=FONT_PT)

    ax.text(0, 6.8, f"BERT-style: E = H = {H}", fontsize=TITLE_PT, weight="bold", va="top")
    matrix(6.0, H * unit, f"word table, V x H = {V:,} x {H}", f"{V * H:,} parameters", ORANGE)

    top = 2.95
    ax.text(0, top + 0.7, f"ALBERT: E = {E}, H = {H}", fontsize=TITLE_PT, weight="bold", va="top")
    matrix(top, E * unit, f"V x E = {V:,} x {E}", f"{V * E:,}", BLUE)
    y = top - row + 0.035
    x1 = left + E * unit + 0.9
    _arrow(ax, (left + E * unit + 0.1, y), (x1 - 0.1, y), "times")
    height = E * unit  # the projection's E rows, to the same scale as its H columns
    _box(ax, x1, y - height / 2, H * unit, height, color=GREEN, alpha=0.8)
    ax.text(x1 + H * unit / 2, y + height / 2 + 0.1, f"projection, E x H = {E} x {H}", ha="center",
            fontsize=FONT_PT)
    ax.text(x1 + H * unit / 2, top - table_height - 0.3, f"{E * H:,} (+ a bias of {H})", ha="center",
            fontsize=FONT_PT)
    x2 = x1 + H * unit + 0.5
    _arrow(ax, (x1 + H * unit + 0.1, y), (x2 - 0.1, y))
    _box(ax, x2, y - 0.035, H * unit, 0.07, color="black", alpha=0.7)
    ax.text(x2, y - 0.3, f"the token's vector,\nwidth H = {H}", va="top", fontsize=FONT_PT)

    ax.text(0, 0.55, f"The whole encoder (count_parameters): {count_parameters(bert_twin):,} parameters with E = H,\n"
            f"{count_parameters(config):,} with E = {E}", va="top", fontsize=FONT_PT)
    return fig


# ------------------------------------------------------------------------------------------- chapter 4
def sharing_diagram(configs: Mapping[str, AlbertConfig]):
    """One block per config, stacked: its L x K layer steps left to right (input on the left), each coloured by
    and labelled with the stored layer it runs (inner layer k of group g is stored layer g * K + k), and below
    them the stored layers themselves."""
    import matplotlib.pyplot as plt

    columns = list(configs.items())
    steps = max(c.num_hidden_layers * c.inner_group_num for _, c in columns)
    colors = plt.get_cmap("tab20").colors
    left, box_h, block = 0.85, 0.38, 2.05  # label column, box height, one config's height (inches)
    step_w = (PAGE_IN - left) / steps
    fig, ax = _canvas(PAGE_IN, 0.5 + block * len(columns))
    ax.text(0, 0.5 + block * len(columns) - 0.05, "Which stored layer each step runs (input on the left)",
            fontsize=TITLE_PT, weight="bold", va="top")
    for number, (label, config) in enumerate(columns):
        L, K = config.num_hidden_layers, config.inner_group_num
        stored = config.num_layer_modules * K
        top = block * (len(columns) - number) - 0.05
        ax.text(0, top, label, fontsize=FONT_PT, weight="bold", va="top")
        ax.text(0, top - LINE_IN, f"L = {L}, G = {config.num_layer_modules}, K = {K}: {L * K} steps run {stored} "
                f"stored layer{'s' if stored > 1 else ''}", fontsize=FONT_PT, va="top")
        y = top - 2 * LINE_IN - 0.1 - box_h
        ax.text(0, y + box_h / 2, "step runs", fontsize=FONT_PT, va="center")
        for step in range(L * K):
            application, inner = divmod(step, K)
            layer = config.layer_to_group(application) * K + inner
            _box(ax, left + step * step_w, y, step_w, box_h, f"{layer}", color=colors[layer % len(colors)],
                 text_color="black").set_gid("step")
            if K > 1 and inner == 0:  # the K inner layers of one application share a bracket
                ax.plot([left + step * step_w + 0.05, left + (step + K) * step_w - 0.05], [y - 0.06] * 2,
                        color="black", lw=1)
                ax.text(left + (step + K / 2) * step_w, y - 0.1, f"pass {application + 1}", ha="center", va="top",
                        fontsize=FONT_PT)
        y -= box_h + (0.45 if K > 1 else 0.2)
        ax.text(0, y + box_h / 2, "stored", fontsize=FONT_PT, va="center")
        for layer in range(stored):
            _box(ax, left + layer * step_w, y, step_w, box_h, f"{layer}", color=colors[layer % len(colors)],
                 text_color="black")
    return fig


# ------------------------------------------------------------------------------------------- chapter 5
def _snippet(text: str, words: int) -> str:
    chosen = text.split()
    return " ".join(chosen[:words]) + (" ..." if len(chosen) > words else "")


def sentence_pair_diagram(segment_a: str, segment_b: str, other: str, sources: Mapping[str, str] | None = None,
                          words: int = 9):
    """The three kinds of pair built from two consecutive segments A, B and a segment from another document:
    the positive both tasks share, SOP's negative (B, A) and NSP's negative (A, other); stacked, each segment
    shown by its first `words` words."""
    sources = dict(sources or {})
    rows = [("A and B in text order", "NSP label 0, SOP label 0", (("A", segment_a, BLUE), ("B", segment_b, GREEN))),
            ("SOP negative: the same two segments swapped", "SOP label 1", (("B", segment_b, GREEN),
                                                                           ("A", segment_a, BLUE))),
            ("NSP negative: B replaced by another document", "NSP label 1",
             (("A", segment_a, BLUE), ("C", other, RED)))]
    special = _text_width("[SEP]") + 0.14
    segment = (PAGE_IN - 3 * special) / 2
    chars = int(segment / _text_width("abcdefghij") * 10) - 2  # characters of Austen that fit in a segment box
    shown = {name: textwrap.fill(_snippet(text, words), chars) for _, _, parts in rows for name, text, _ in parts}
    box_h = max(t.count("\n") + 1 for t in shown.values()) * LINE_IN + 0.16
    note = textwrap.wrap("Token types: 0 for [CLS], the first segment and its [SEP]; 1 for the second segment and "
                         "the last [SEP]. SOP's two orders contain the same words; NSP's negative brings new ones.",
                         CHARS)
    row_h = box_h + 2 * LINE_IN + 0.35
    height = len(rows) * row_h + len(note) * LINE_IN + 0.1
    fig, ax = _canvas(PAGE_IN, height)
    for row, (title, label, parts) in enumerate(rows):
        top = height - row * row_h
        ax.text(0, top, title, fontsize=FONT_PT, weight="bold", va="top")
        ax.text(PAGE_IN, top, label, fontsize=FONT_PT, ha="right", va="top")
        y = top - 2 * LINE_IN - 0.1 - box_h
        x = 0.0
        _box(ax, x, y, special, box_h, "[CLS]", color=GREY, text_color="black")
        x += special
        for name, _text, color in parts:
            caption = f"{name}" + (f" ({sources[name]})" if name in sources else "")
            _box(ax, x, y, segment, box_h, shown[name], color=color, alpha=0.25, text_color="black")
            ax.text(x + 0.03, y + box_h + 0.04, caption, fontsize=FONT_PT, va="bottom", style="italic")
            x += segment
            _box(ax, x, y, special, box_h, "[SEP]", color=GREY, text_color="black")
            x += special
    ax.text(0, len(note) * LINE_IN, "\n".join(note), fontsize=FONT_PT, va="top")
    return fig


# ------------------------------------------------------------------------------------------- chapter 6
def masking_diagram(pieces: Sequence[str], word_ids: Sequence[int], spans, shown: Sequence[str]):
    """Pieces in reading order, wrapped into lines like text (pieces of one word touch, words have a gap), the
    chosen spans (each a run of whole words, marked with its length n), and below each chosen piece what the
    model is given: [MASK] (grey), a random piece (orange) or the piece itself (green).

    `spans` are objects with start, end (token positions, end exclusive) and n (words kept), as `Masker` returns.
    """
    inside = {}
    for span in spans:
        for i in range(span.start, span.end):
            inside[i] = span
    widths = [max(_text_width(pieces[i]), _text_width(shown[i]) if i in inside else 0.0) + 0.14
              for i in range(len(pieces))]
    gaps = [0.12 if i == 0 or word_ids[i] != word_ids[i - 1] or word_ids[i] < 0 else 0.0 for i in range(len(pieces))]
    lines = _flow(widths, gaps, PAGE_IN)
    note = textwrap.wrap("Blue: pieces chosen for prediction (whole words, in n-gram spans). Below them, the model "
                         "input: [MASK] (grey), a random piece (orange) or the piece unchanged (green). Word "
                         "boundaries are the gaps.", CHARS)
    box_h = 0.32
    # a line with a chosen piece holds a label above it and the model's input below it
    line_h = [1.12 if any(i in inside for i in line) else 0.62 for line in lines]
    height = sum(line_h) + (len(note) + 0.5) * LINE_IN
    fig, ax = _canvas(PAGE_IN, height)
    for line_number, positions in enumerate(lines):
        y = height - sum(line_h[:line_number]) - LINE_IN - 0.08 - box_h
        x = 0.0
        for i in positions:
            x += gaps[i] if i != positions[0] else 0.0
            span = inside.get(i)
            _box(ax, x, y, widths[i], box_h, pieces[i], color=BLUE if span else GREY, alpha=0.9 if span else 0.35,
                 text_color="white" if span else "black")
            if span is not None:
                kind = "mask" if shown[i] == "[MASK]" else ("kept" if shown[i] == pieces[i] else "random")
                color = {"mask": GREY, "kept": GREEN, "random": ORANGE}[kind]
                _box(ax, x, y - box_h - 0.04, widths[i], box_h, shown[i], color=color, alpha=0.9, text_color="black")
                if i == span.start:
                    ax.text(x, y + box_h + 0.04, f"n = {span.n}", fontsize=FONT_PT, color=BLUE)
            x += widths[i]
    ax.text(0, len(note) * LINE_IN, "\n".join(note), fontsize=FONT_PT, va="top")
    return fig


# ------------------------------------------------------------------------------------------- chapter 2
def pieces_diagram(tokenizer, text: str):
    """How `tokenizer` (a `Tokenizer`) reads `text`: [CLS], the SentencePiece pieces, [SEP], each with its id below;
    pieces after a space (with the "▁" mark) in blue, pieces attached to the one before in green, specials grey."""
    ids = [tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]
    pieces = [tokenizer.id_to_piece(int(i)) for i in ids]
    widths = [max(_text_width(p), _text_width(str(i))) + 0.14 for p, i in zip(pieces, ids)]
    starts = [p.startswith("▁") for p in pieces]
    gaps = [0.12 if start or k == 0 or pieces[k] in ("[CLS]", "[SEP]") else 0.0 for k, start in enumerate(starts)]
    lines = _flow(widths, gaps, PAGE_IN)
    heading = textwrap.wrap(f"text: {text!r}", CHARS)
    words = len(text.split())
    note = textwrap.wrap(f"{words} words, {len(ids) - 2} pieces plus [CLS] and [SEP]. Blue pieces follow a space "
                         "(the ▁ mark), green ones attach to the piece before; under each piece is its id, the row "
                         "of the embedding table the model reads.", CHARS)
    box_h, line_h = 0.32, 0.75
    height = (len(heading) + len(note) + 0.6) * LINE_IN + len(lines) * line_h
    fig, ax = _canvas(PAGE_IN, height)
    ax.text(0, height, "\n".join(heading), fontsize=FONT_PT, va="top")
    for line_number, positions in enumerate(lines):
        y = height - (len(heading) + 0.4) * LINE_IN - line_number * line_h - box_h
        x = 0.0
        for k in positions:
            x += gaps[k] if k != positions[0] else 0.0
            special = pieces[k] in ("[CLS]", "[SEP]")
            color = GREY if special else (BLUE if starts[k] else GREEN)
            _box(ax, x, y, widths[k], box_h, pieces[k], color=color, alpha=0.9,
                 text_color="black" if special else "white").set_gid("piece")
            ax.text(x + widths[k] / 2, y - 0.06, f"{ids[k]}", ha="center", va="top", fontsize=FONT_PT,
                    gid="id")
            x += widths[k]
    ax.text(0, len(note) * LINE_IN, "\n".join(note), fontsize=FONT_PT, va="top")
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
    fig, ax = _figure(PAGE_IN, 9)
    left, width, count_x = 0.0, 0.6, 0.64

    def stage(y, h, text, count, color):
        _box(ax, left, y, width, h, text, color=color)
        ax.text(count_x, y + h / 2, count, va="center", fontsize=FONT_PT)

    def up(x, y0, y1, label=""):
        _arrow(ax, (x, y0), (x, y1))
        ax.text(x + 0.01, (y0 + y1) / 2, label, va="center", fontsize=FONT_PT)

    ax.text(left + width / 2, 0.02, "token ids (T of them), each in 0 .. V - 1", ha="center", fontsize=FONT_PT)
    up(left + width / 2, 0.05, 0.09)
    stage(0.09, 0.09, f"word table V x E = {V:,} x {E}\n+ positions, token types (E wide)\nLayerNorm",
          f"{parts['embeddings']:,} parameters", ORANGE)
    up(left + width / 2, 0.18, 0.22, "T x E")
    stage(0.22, 0.07, f"projection E x H = {E} x {H} (+ bias)", f"{parts['projection']:,}", GREEN)
    up(left + width / 2, 0.29, 0.33, "T x H")
    shared = "one layer, shared" if stored == 1 else f"{stored} stored layers"
    stage(0.33, 0.22, f"{shared},\napplied L = {L} times:\nself-attention ({A} heads),\nadd, LayerNorm,\n"
          f"FFN H -> {F:,} -> H,\nadd, LayerNorm", f"{layer:,}\n(attention {parts['attention']:,}\n"
          f"+ FFN {parts['ffn']:,})", BLUE)
    # the loop: the output of the layer goes back into it L - 1 times
    ax.annotate("", xy=(left - 0.005, 0.37), xytext=(left - 0.005, 0.51),
                arrowprops=dict(arrowstyle="->", lw=1.2, color="black", connectionstyle="arc3,rad=0.6"))
    ax.text(left - 0.04, 0.44, f"x {L}", ha="right", va="center", fontsize=TITLE_PT, weight="bold")
    up(left + width * 0.25, 0.55, 0.62, "every token")
    up(left + width * 0.75, 0.55, 0.62, "[CLS] only")
    _box(ax, left, 0.62, width * 0.48, 0.17, "MLM head\ndense H -> E,\nLayerNorm,\ndecoder E -> V\n"
         "(tied to the\nword table)", color=RED)
    _box(ax, left + width * 0.52, 0.62, width * 0.48, 0.17, "pooler H x H,\ntanh\nSOP classifier\nH -> 2",
         color=RED)
    ax.text(count_x, 0.705, f"MLM head {parts['mlm_head']:,}\npooler {parts['pooler']:,}\n"
            f"SOP classifier {parts['sentence_head']:,}", va="center", fontsize=FONT_PT)
    ax.text(left + width * 0.24, 0.81, "masked piece?", ha="center", fontsize=FONT_PT)
    ax.text(left + width * 0.76, 0.81, "A and B in order?", ha="center", fontsize=FONT_PT)
    total = count_parameters(config, heads=True)
    ax.text(-0.1, 0.94, f"ALBERT for pretraining: {total:,} parameters", fontsize=TITLE_PT, weight="bold")
    ax.text(-0.1, 0.865, f"V = {V:,}, E = {E}, H = {H}, L = {L}\nthe encoder alone, with its pooler: "
            f"{count_parameters(config):,}", fontsize=FONT_PT)
    ax.set_xlim(-0.1, 1.02)
    ax.set_ylim(0, 0.97)
    return fig


def layer_norm_placement_diagram():
    """Post-LN (BERT, ALBERT) against pre-LN (GPT-2 and most later models): where the LayerNorms sit in a layer."""
    fig, ax = _figure(PAGE_IN, 6.8)
    columns = [("post-LN: BERT and ALBERT", 0.0,
                [("attention", BLUE), ("add x", None), ("LayerNorm", GREEN), ("FFN", ORANGE), ("add", None),
                 ("LayerNorm", GREEN)]),
               ("pre-LN: GPT-2 and most later models", 0.52,
                [("LayerNorm", GREEN), ("attention", BLUE), ("add x", None), ("LayerNorm", GREEN),
                 ("FFN", ORANGE), ("add", None)])]
    for title, x, steps in columns:
        ax.text(x + 0.2, 0.96, title, ha="center", fontsize=FONT_PT, weight="bold")
        ax.text(x + 0.2, 0.02, "x (the layer's input)", ha="center", fontsize=FONT_PT)
        y, h, gap = 0.08, 0.09, 0.045
        for text, color in steps:
            if color is None:
                _box(ax, x + 0.12, y, 0.16, h, text, color=GREY, text_color="black")
            else:
                _box(ax, x + 0.05, y, 0.3, h, text, color=color)
            _arrow(ax, (x + 0.2, y - gap + 0.005), (x + 0.2, y - 0.003))
            y += h + gap
        ax.text(x + 0.2, y - gap + 0.03, "output", ha="center", fontsize=FONT_PT)
    note = textwrap.wrap("Post-LN normalises the sum after each residual add, so the residual path itself is "
                         "normalised; pre-LN normalises only what enters each sub-layer, and the residual path runs "
                         "through unchanged.", CHARS)
    ax.text(-0.02, -0.04, "\n".join(note), fontsize=FONT_PT, va="top")
    ax.set_xlim(-0.02, 0.94)
    ax.set_ylim(-0.04 - 0.035 * len(note), 1.0)
    return fig


# ------------------------------------------------------------------------------------------- chapter 8
def race_packing_diagram(passage_tokens: int, qa_tokens: int, max_length: int, max_qa_length: int):
    """One RACE row, `[CLS] passage [SEP] question+option [SEP]`, drawn to scale: which tokens the truncation
    keeps (the question+option's end, the passage's start) and which it drops, for the given lengths."""
    qa_kept = min(qa_tokens, max_qa_length)
    passage_kept = min(passage_tokens, max_length - 3 - qa_kept)
    title = textwrap.wrap(f"A passage of {passage_tokens} tokens and a question+option of {qa_tokens}, packed "
                          f"into max_length = {max_length} with max_qa_length = {max_qa_length}", CHARS - 6)
    note = [f"Kept: [CLS] + the passage's first {passage_kept} + [SEP]",
            f"+ the question+option's last {qa_kept} + [SEP] = {passage_kept + qa_kept + 3} tokens. Pale: dropped.",
            *textwrap.wrap("The option sits at the end of its text and is what is scored, so the end is kept; each "
                           "option gets its own copy of the passage.", CHARS)]
    height = (len(title) + len(note)) * LINE_IN + 1.95
    fig, ax = _canvas(PAGE_IN, height)
    ax.text(0, height, "\n".join(title), fontsize=FONT_PT, weight="bold", va="top")
    unit = PAGE_IN / (passage_tokens + qa_tokens + 3)
    y, h = len(note) * LINE_IN + 0.75, 0.4
    x = 0.0
    ends, levels = {True: -1.0, False: -1.0}, {True: 0, False: 0}  # the last label above (kept) and below
    pieces = [("[CLS]", 1, GREY, True), ("passage, kept", passage_kept, BLUE, True),
              ("passage, dropped", passage_tokens - passage_kept, BLUE, False), ("[SEP]", 1, GREY, True),
              ("question+option, dropped", qa_tokens - qa_kept, GREEN, False),
              ("question+option, kept", qa_kept, GREEN, True), ("[SEP]", 1, GREY, True)]
    for label, n, color, kept in pieces:
        if n <= 0:
            continue
        count = f"{n}" if _text_width(f"{n}") + 0.06 < n * unit else ""
        _box(ax, x, y, n * unit, h, count, color=color, alpha=0.85 if kept else 0.2,
             text_color="white" if kept else "black")
        if n > 1:  # kept parts are named above the row, dropped ones below; a label that would touch the one
            # before it on its side moves a line further out
            half = _text_width(label) / 2
            centre = min(max(x + n * unit / 2, half), PAGE_IN - half)
            levels[kept] = levels[kept] + 1 if centre - half < ends[kept] + 0.1 else 0
            offset = 0.08 + levels[kept] * LINE_IN
            ax.text(centre, y + h + offset if kept else y - offset, label, ha="center",
                    va="bottom" if kept else "top", fontsize=FONT_PT)
            ends[kept] = centre + half
        x += n * unit
    ax.text(0, len(note) * LINE_IN, "\n".join(note), fontsize=FONT_PT, va="top")
    return fig


def squad_windows_diagram(context_tokens: int, query_tokens: int, max_length: int, doc_stride: int,
                          answer: tuple[int, int] | None = None):
    """SQuAD's windows over a long context: each holds max_length - 3 - query tokens and starts doc_stride after
    the previous one (`albert_mini.tasks.features.window_starts`); the answer, if given, is marked in each."""
    from ..tasks.features import window_starts

    window = max_length - 3 - query_tokens
    starts = window_starts(context_tokens, window, doc_stride)
    title = textwrap.wrap(f"max_length {max_length}, query {query_tokens} tokens: each window holds {max_length} - 3 "
                          f"- {query_tokens} = {window} context tokens and starts {doc_stride} after the last",
                          CHARS - 6)
    label_w = _text_width("no answer: [CLS]") + 0.15  # the target column on the right
    unit = (PAGE_IN - label_w) / context_tokens
    bar, row = 0.3, 0.62
    height = len(title) * LINE_IN + 0.45 + row * (len(starts) + 1)
    fig, ax = _canvas(PAGE_IN, height)
    ax.text(0, height, "\n".join(title), fontsize=FONT_PT, weight="bold", va="top")
    y = height - len(title) * LINE_IN - 0.45 - bar
    _box(ax, 0, y, context_tokens * unit, bar, color=GREY)
    ax.text(0, y + bar + 0.03, f"context: {context_tokens} tokens" + (", the answer in red" if answer else ""),
            fontsize=FONT_PT)
    if answer is not None:
        _box(ax, answer[0] * unit, y, (answer[1] - answer[0] + 1) * unit, bar, color=RED, alpha=0.9)
    for k, start in enumerate(starts):
        y -= row
        end = min(start + window, context_tokens)
        inside = answer is not None and start <= answer[0] and answer[1] < end
        _box(ax, start * unit, y, (end - start) * unit, bar, color=BLUE)
        ax.text(start * unit, y + bar + 0.03, f"window {k + 1}: tokens {start}-{end - 1}", fontsize=FONT_PT)
        if answer is not None:
            ax.text(PAGE_IN - label_w + 0.15, y + bar / 2, "answer inside" if inside else "no answer: [CLS]",
                    va="center", fontsize=FONT_PT)
            if inside:
                _box(ax, answer[0] * unit, y, (answer[1] - answer[0] + 1) * unit, bar, color=RED)
    return fig
