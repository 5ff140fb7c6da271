"""`albert-mini html [--out DIR]`: the book as static HTML (what `make html` runs), by albert_mini.book.html_book."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..cli import run as run_cli
from ..paths import repo_root
from ..safe_files import Writes
from . import command_parser, docstring_of

WRITES = Writes("html", outputs="--out DIR (default build/html): the book's pages, and a record of them (a rebuild "
                "deletes only unchanged files it wrote; any other file in DIR is refused)",
                inputs="chapters/*.ipynb, chapters/TEACHER_GUIDE.md, figures/, README.md")


def main(argv: list[str] | None = None) -> int:
    """Command line: build the book; a failure ends with one error line and exit status 2 (--debug: traceback)."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = command_parser("html", description=docstring_of("book.html_book"),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: build/html)")
    args = parser.parse_args(argv)
    from ..book import html_book  # numpy and torch (the exercises' solutions): once the flags are read

    root = repo_root()
    start = time.perf_counter()
    index = html_book.build(args.out or root / "build" / "html", root, writes=WRITES)
    print(f"{index} ({time.perf_counter() - start:.0f} s): open it in a browser, no server needed", flush=True)
    return 0
