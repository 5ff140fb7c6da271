"""Figures a reader can read: the book's column, its body text, the sizes a figure uses and a check of its text.

The rule. A figure is shown scaled down to the column when it is wider, never up: a font of s pt in a figure
W inches wide (its tight bounding box, as saved) shown at D dpi appears at s * D / 72 * min(1, C / (W * D)) px.
Every piece of text a figure draws must appear at least MIN_TEXT_PX = 0.9 x the body text, with

- C = COLUMN_PX = 750: the HTML book's article column (sphinx-book-theme: 80% of the page minus the 17rem right
  sidebar, less 2rem padding each side; 752 px on a 1366-px screen, 790 px at the theme's widest page).
  JupyterLab's notebook is wider than that with its file browser open, so the book is the narrower case;
- body text BODY_PX = 16 px (the theme's 1rem; JupyterLab's is 14 px, which makes the book the stricter case);
- D = min(the figure's dpi, SAVE_DPI = 120): notebooks show a figure inline at its own dpi (matplotlib's default
  SHOWN_DPI = 100), figures/ holds it at 120 dpi, and the lower dpi gives the smaller apparent text.

So a figure at 100 dpi and at most WIDTH_IN = 7.5 inches wide needs 10.4 pt text; a wider one needs more.
`book_style()` (sizes as rcParams) and `book_figure()` (plt.subplots at the column's width) give FONT_PT = 11
everywhere; `smallest_text(fig)` measures what a reader sees, the check the tests make on every figure.
A chapter's own figure passes with matplotlib's default 10-pt text when it is drawn exactly the column wide at a
higher dpi: `plt.subplots(..., figsize=(CHAPTER_WIDTH_IN, h), dpi=CHAPTER_DPI)` (6.8 in x 110 dpi = 748 px, so
10 pt appears at 15.3 px; explicit font sizes must then be at least 9.4 pt).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

COLUMN_PX = 750
BODY_PX = 16
MIN_TEXT_PX = 0.9 * BODY_PX
SHOWN_DPI = 100
SAVE_DPI = 120  # albert_mini.paths.save_figure
WIDTH_IN = COLUMN_PX / SHOWN_DPI  # 7.5: the widest figure shown without being scaled down
CHAPTER_WIDTH_IN, CHAPTER_DPI = 6.8, 110  # 748 px: the column's width, where 10-pt text appears at 15.3 px
FONT_PT = 11  # 15.3 px at or below WIDTH_IN: every label, tick, legend and annotation
TITLE_PT = 12
CHARS = 76  # characters of FONT_PT text (matplotlib's DejaVu Sans) in a line of WIDTH_IN less savefig's padding

BOOK_RC = {"font.size": FONT_PT, "axes.titlesize": TITLE_PT, "axes.labelsize": FONT_PT,
           "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT,
           "legend.title_fontsize": FONT_PT, "figure.titlesize": TITLE_PT}


@contextmanager
def book_style():
    """rcParams with the book's font sizes, for the text a figure function creates inside the block."""
    import matplotlib

    with matplotlib.rc_context(BOOK_RC):
        yield


def book_figure(nrows: int = 1, ncols: int = 1, *, height: float, width: float = WIDTH_IN, **kwargs):
    """plt.subplots at the column's width with tick labels fixed at FONT_PT (ticks are made lazily, at draw time,
    when rcParams may be back to their defaults); draw the rest inside `book_style()`."""
    import matplotlib.pyplot as plt

    with book_style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), **kwargs)
    for ax in fig.axes:
        ax.tick_params(labelsize=FONT_PT)
    return fig, axes


def apparent_px(points: float, width_in: float, dpi: float = SHOWN_DPI, column_px: float = COLUMN_PX) -> float:
    """How many CSS px tall a `points`-pt font looks in a figure `width_in` wide, shown at `dpi` in the column."""
    return points * dpi / 72 * min(1.0, column_px / (width_in * dpi))


@dataclass
class TextSize:
    """The smallest text a figure draws: its size in pt, the figure's saved width and how large it looks."""

    points: float
    text: str
    width_in: float
    px: float

    def __str__(self) -> str:
        return f"{self.px:.1f} px ({self.points:g} pt in a {self.width_in:.1f}-inch figure): {self.text!r}"


def smallest_text(fig, dpi: float | None = None, column_px: float = COLUMN_PX) -> TextSize:
    """Draw `fig` and return the smallest text it draws as a reader sees it (`apparent_px` at `dpi`, by default
    the lower of the figure's own and SAVE_DPI), the width being that of its tight bounding box as saved; only
    text actually drawn counts (not ticks outside the view)."""
    import matplotlib

    dpi = min(fig.dpi, SAVE_DPI) if dpi is None else dpi

    fig.canvas.draw()  # lays out ticks and tight_layout first, as saving does
    renderer = fig.canvas.get_renderer()
    pad = matplotlib.rcParams["savefig.pad_inches"]
    width_in = fig.get_tightbbox(renderer).width + 2 * pad
    drawn = []
    original = renderer.draw_text

    def record(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip():
            drawn.append((prop.get_size_in_points(), s))
        return original(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = record
    try:
        fig.draw(renderer)
    finally:
        del renderer.draw_text  # the instance attribute hid the class's method
    if not drawn:
        raise ValueError("the figure draws no text")
    points, text = min(drawn)
    return TextSize(points, text, width_in, apparent_px(points, width_in, dpi, column_px))
