"""`albert-mini book CHAPTER.py...`: execute chapters in full mode and refresh their notebooks (what `make book` runs).

The building (pairing, cell ids, execution) is albert_mini.book.build's (`build_chapter`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..book import build
from ..book.lab import require_kernel
from ..cli import run as run_cli
from ..paths import FIGURES_ROOT, REPO_ROOT
from ..safe_files import Writes
from ..settings import FAST_ENV, STATIC_ENV
from . import command_parser

WRITES = Writes("book", outputs="CHAPTER.ipynb beside each CHAPTER.py, and the figures the chapters draw",
                inputs="the CHAPTER.py sources (and the data they read)",
                regenerates="chapters/*.ipynb and figures/, declaredly: the command exists to refresh them")


def main(argv: list[str] | None = None) -> int:
    """Command line: build the chapters named; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = command_parser("book", description=build.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="+", type=Path, help="chapter sources (chapters/NN_name.py)")
    args = parser.parse_args(argv)
    os.environ.pop(FAST_ENV, None)  # the book is always built in full mode
    os.environ[STATIC_ENV] = "1"  # a widget's state is not a result: the committed notebook shows a table
    for source in args.chapters:
        if source.suffix != ".py" or not source.exists():
            parser.error(f"{source} is not a chapter source (.py)")
    WRITES.check(files=[("CHAPTER", source.with_suffix(".ipynb")) for source in args.chapters], inputs=args.chapters,
                 overwrite=True, regenerates=[REPO_ROOT / "chapters", FIGURES_ROOT])  # a chapter's own notebook
    require_kernel()  # before the first chapter: its notebook names the environment's albert-mini kernel
    for source in args.chapters:
        seconds = build.build_chapter(source)
        print(f"{source}: executed in {seconds:.0f} s -> {source.with_suffix('.ipynb')}", flush=True)
    return 0
