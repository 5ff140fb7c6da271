"""`albert-mini corpus [SOURCE]`: rebuild data/austen/ from the Debian package r-cran-janeaustenr.

The work, and the normalisation and split rules, are albert_mini.text.build_corpus's (`build`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..cli import run as run_cli
from ..paths import DATA_ROOT
from ..text import build_corpus
from . import command_parser


def main(argv: list[str] | None = None) -> None:
    """Command line: rebuild data/austen; bad input ends with one error line and exit status 2."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    parser = command_parser("corpus")
    parser.add_argument("source", nargs="?", type=Path, help=f"{build_corpus.PACKAGE} .deb, its extracted folder or "
                        "Rdata.rdx (default: apt-get download into cache/)")
    parser.add_argument("--out", type=Path, default=DATA_ROOT / "austen", help="output folder (default: data/austen)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    stats = build_corpus.build(args.source, args.out)
    print(json.dumps(stats, indent=2))
    print(f"built {args.out} in {time.perf_counter() - start:.2f} s")
