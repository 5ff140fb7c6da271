"""Build the textbook: pair each chapter's .py source with its .ipynb and execute it; save chapter figures.

    python -m albert_mini.book chapters/03_factorized_embeddings.py ...   # what `make book` runs
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from . import cli
from .paths import repo_root
from .settings import FAST_ENV, fast_mode

CELL_TIMEOUT_SECONDS = 1800


def figure_path(name: str) -> Path:
    """Where a chapter saves figure `name`: figures/ in full mode, a git-ignored cache in fast mode."""
    folder = repo_root() / ("cache/figures-fast" if fast_mode() else "figures")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def save_figure(fig, name: str, folder: Path | None = None) -> Path:
    """Save a matplotlib figure for the book (PNG, 120 dpi, tight) and return its path (default: figure_path)."""
    path = figure_path(name) if folder is None else Path(folder) / name
    fig.savefig(path, dpi=120, bbox_inches="tight", metadata={"Software": None})
    return path


def build_chapter(source: Path, timeout: int = CELL_TIMEOUT_SECONDS) -> float:
    """Convert a py:percent chapter to .ipynb next to it, execute it in full mode, write it; return seconds."""
    import jupytext
    from nbclient import NotebookClient

    notebook = jupytext.read(source)
    notebook.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    start = time.perf_counter()
    NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(source.parent)}}).execute()
    jupytext.write(notebook, source.with_suffix(".ipynb"))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Command line: build the chapters named; bad input ends with one error line and exit status 2."""
    return cli.run(_main, argv)


def _main(argv: list[str]) -> int:
    parser = cli.Parser(prog="python -m albert_mini.book",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="+", type=Path, help="chapter sources (chapters/NN_name.py)")
    args = parser.parse_args(argv)
    os.environ.pop(FAST_ENV, None)  # the book is always built in full mode
    for source in args.chapters:
        if source.suffix != ".py" or not source.exists():
            parser.error(f"{source} is not a chapter source (.py)")
        seconds = build_chapter(source)
        print(f"{source}: executed in {seconds:.0f} s -> {source.with_suffix('.ipynb')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
