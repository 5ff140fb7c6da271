"""Every figure the package draws shows its text at least 0.9 x the book's body text at the book's column width.

The rule (albert_mini/study/figure_style.py): text of s pt in a figure W inches wide, shown at 100 dpi and scaled
down to a 750-px column when wider, appears at s * 100 / 72 * min(1, 750 / (100 W)) px; the smallest text drawn
must appear at >= 0.9 x 16 px = 14.4 px.
"""

import json

import matplotlib
import numpy as np
import pytest

from albert_mini import AlbertConfig
from albert_mini.paths import DATA_ROOT
from albert_mini.study.figure_style import (
    BODY_PX,
    COLUMN_PX,
    MIN_TEXT_PX,
    apparent_px,
    book_figure,
    book_style,
    smallest_text,
)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

RESULTS = DATA_ROOT / "results"
AUSTEN = ("It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
          "of a wife. However little known the feelings or views of such a man may be on his first entering a "
          "neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is "
          "considered the rightful property of some one or other of their daughters.")


def result(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def tokenizer():
    from albert_mini.text.tokenizer import Tokenizer

    return Tokenizer.default()


def masking_inputs():
    """72 pieces of Austen masked by the package's Masker, as chapter 6 draws them."""
    from albert_mini.text.masking import Masker

    tok = tokenizer()
    ids = np.array(tok.encode(AUSTEN)[:72])
    masker = Masker.from_tokenizer(tok)
    masked = masker(ids, np.random.default_rng(0))
    return ([tok.id_to_piece(int(t)) for t in ids], masker.word_ids(ids), list(masked.spans),
            [tok.id_to_piece(int(t)) for t in masked.input_ids])


def diagram(name, *args):
    def build():
        from albert_mini.book import diagrams

        return getattr(diagrams, name)(*[a() if callable(a) else a for a in args])
    return build


def experiment(name):
    def build():
        from albert_mini.harness.experiments import EXPERIMENTS

        return EXPERIMENTS[name].figure(result(name))
    return build


def sharing_configs():
    mini = AlbertConfig.from_preset("albert-mini")  # the three columns chapter 4 draws
    return {"BERT-style: nothing shared (G = L)": mini.replace(num_hidden_groups=6),
            "ALBERT: all shared (G = 1)": mini,
            "groups and inner groups": mini.replace(num_hidden_groups=3, inner_group_num=2)}


def smoothness_plot():
    from albert_mini.study.smoothness import Smoothness, plot_smoothness

    rng = np.random.default_rng(0)
    runs = {name: Smoothness(list(rng.uniform(1, 10, 24)), list(rng.uniform(5, 60, 24)), 1000)
            for name in ("ALBERT (shared)", "not shared", "BERT-style")}
    return plot_smoothness(runs, title="Layer input vs output at initialisation (24 layers, H = 256, random ids)")


def parameters_plot(preset):
    def build():
        from albert_mini.study.parameter_plots import plot_parameters_vs_embedding

        return plot_parameters_vs_embedding(preset)
    return build


def research(module, name, function="figure"):
    def build():
        import importlib

        return getattr(importlib.import_module(f"albert_mini.harness.research.{module}"), function)(result(name))
    return build


def reader(module, name, function="figure"):
    """A figure the library draws from a committed result file (albert_mini.study.<module>)."""
    def build():
        import importlib

        return getattr(importlib.import_module(f"albert_mini.study.{module}"), function)(result(name))
    return build


def classroom_curve():
    from albert_mini.harness.research.model_card import curve_plot
    from albert_mini.training.rundir import read_run

    return curve_plot({"curriculum (64 then 128)": read_run(DATA_ROOT / "pretrained" / "albert-mini-austen")[1],
                       "previous model (seq 128 throughout)": read_run(RESULTS / "classroom-model-v1")[1]})


def not_yet(reason):
    """A figure outside this test's owner's files: strict, so the mark must go once the figure is laid out."""
    return pytest.mark.xfail(strict=True, reason=f"{reason}: to be drawn with figure_style.book_figure")


FIGURES = {
    "embedding_diagram": diagram("embedding_diagram", lambda: AlbertConfig.from_preset("albert-base")),
    "sharing_diagram": diagram("sharing_diagram", sharing_configs),
    "sentence_pair_diagram": diagram("sentence_pair_diagram", AUSTEN[:180], AUSTEN[180:], AUSTEN[90:260],
                                     {"A": "Pride and Prejudice, chapter 1", "B": "the text after A",
                                      "C": "Emma, chapter 3"}),
    "masking_diagram": lambda: diagram("masking_diagram", *masking_inputs())(),
    "albert_diagram": diagram("albert_diagram", lambda: AlbertConfig.from_preset("albert-base")),
    "layer_norm_placement_diagram": diagram("layer_norm_placement_diagram"),
    "race_packing_diagram": diagram("race_packing_diagram", 120, 20, 64, 8),
    "squad_windows_diagram": diagram("squad_windows_diagram", 200, 10, 64, 24, (100, 103)),
    "pieces_diagram": lambda: diagram("pieces_diagram", tokenizer, AUSTEN[:62])(),
    "experiment sharing": experiment("sharing"),
    "experiment embedding_size": experiment("embedding_size"),
    "experiment smoothness": experiment("smoothness"),
    "experiment sentence_task": experiment("sentence_task"),
    "experiment sop_levers": experiment("sop_levers"),
    "experiment sop_escape": experiment("sop_escape"),
    "experiment sop_language": experiment("sop_language"),
    "experiment sop_supervised": experiment("sop_supervised"),
    "parameters vs E, albert-base": parameters_plot("albert-base"),
    "parameters vs E, albert-xxlarge": parameters_plot("albert-xxlarge"),
    "plot_smoothness": smoothness_plot,
    "experiment finetune": experiment("finetune"),
    "experiment memory": experiment("memory"),
    "experiment throughput": experiment("throughput"),
    "recipe_results": research("recipe_results", "recipe_search"),
    "time_to_quality": reader("time_to_quality", "time_to_quality"),
    "collapse_figure": reader("collapse", "recipe_search", "collapse_figure"),
    "classroom model curve": classroom_curve,
}
OTHERS = {}
CASES = [pytest.param(build, id=name) for name, build in FIGURES.items()] + [
    pytest.param(build, id=name, marks=not_yet(reason)) for name, (build, reason) in OTHERS.items()]


@pytest.mark.parametrize("build", CASES)
def test_figure_text_is_as_large_as_the_body_text_at_the_column_width(build):
    fig = build()
    try:
        smallest = smallest_text(fig)
        assert smallest.px >= MIN_TEXT_PX, f"smallest text {smallest}; needs >= {MIN_TEXT_PX:.1f} px"
    finally:
        plt.close(fig)


def test_the_rule_scales_a_figure_down_to_the_column_and_never_up():
    assert apparent_px(11, 5) == pytest.approx(11 * 100 / 72)  # 500 px wide: shown at its own size
    assert apparent_px(11, 15) == pytest.approx(11 * 100 / 72 * COLUMN_PX / 1500)  # halved
    assert MIN_TEXT_PX == pytest.approx(0.9 * BODY_PX)


def test_the_measure_finds_small_ticks_in_a_wide_figure_and_passes_the_book_style():
    fig, ax = plt.subplots(figsize=(15, 4))  # matplotlib's defaults: 10-pt ticks, shown at half size
    ax.plot([0, 1], [0, 1])
    wide = smallest_text(fig)
    assert wide.points == 10 and wide.px == pytest.approx(apparent_px(10, wide.width_in)) and wide.px < MIN_TEXT_PX
    fig, ax = book_figure(height=3)
    with book_style():
        ax.plot([0, 1], [0, 1])
        ax.set(xlabel="x", title="a title")
        ax.legend(["a line"])
    assert smallest_text(fig).px >= MIN_TEXT_PX
    plt.close("all")


def test_the_html_book_opens_every_figure_full_size_on_click(tmp_path):
    from albert_mini.book import html_book
    from albert_mini.paths import repo_root

    html_book.stage(repo_root(), tmp_path / "src")
    conf = (tmp_path / "src" / "conf.py").read_text()
    assert 'html_js_files = ["zoom.js"]' in conf and '"zoom.css"' in conf
    script = (tmp_path / "src" / "_static" / "zoom.js").read_text()
    assert 'querySelectorAll("article.bd-article img")' in script and 'e.key === "Escape"' in script
    assert "cursor: zoom-in" in (tmp_path / "src" / "_static" / "zoom.css").read_text()
    assert "http" not in script  # nothing fetched: the book opens from file:// without a network


def test_a_chapter_figure_drawn_the_column_wide_at_110_dpi_shows_the_default_text_large_enough():
    from albert_mini.study.figure_style import CHAPTER_DPI, CHAPTER_WIDTH_IN

    sizes = {}
    for dpi in (100, CHAPTER_DPI):  # matplotlib's 10-pt default text: 13.9 px at 100 dpi, 15.3 px at 110
        fig, ax = plt.subplots(figsize=(CHAPTER_WIDTH_IN, 3), dpi=dpi)
        ax.plot([0, 1], [0, 1], label="a line")
        ax.set(xlabel="x", ylabel="y")
        ax.legend()
        sizes[dpi] = smallest_text(fig).px
        plt.close(fig)
    assert sizes[100] < MIN_TEXT_PX <= sizes[CHAPTER_DPI]
