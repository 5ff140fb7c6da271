"""`albert-mini exercises CHAPTER.py... --out DIR`: a hand-out folder for a class (what `make exercises` runs).

What goes into the folder is albert_mini.book.exercises.student's (`write_handout`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli import run as run_cli
from ..safe_files import Writes
from . import command_parser, docstring_of

WRITES = Writes("exercises", outputs="--out DIR: chapters/NN_name.ipynb (or source/NN_name/), solutions, the "
                "figures they link, and a record of them (a rerun replaces only unchanged files it wrote; "
                "--overwrite for others)",
                inputs="the CHAPTER.py sources, chapters/solutions/, figures/")


def main(argv: list[str] | None = None) -> int:
    """Command line: write the hand-out folder; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = command_parser("exercises", description=docstring_of("book.exercises.student"),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="+", type=Path, help="chapter sources (chapters/NN_name.py)")
    parser.add_argument("--out", type=Path, default=Path("build/student"), help="the hand-out folder")
    parser.add_argument("--with-solutions", action="store_true", help="add chapters/solutions/ to the hand-out")
    parser.add_argument("--nbgrader-source", action="store_true",
                        help="write nbgrader's source version (solutions between its markers, figures embedded) to "
                        "OUT/source/")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace files in --out that this command did not write, or that were edited since")
    args = parser.parse_args(argv)
    from ..book.exercises import student  # numpy and torch (the exercises' checks): once the flags are read

    figures = student.write_handout(args.chapters, args.out, args.with_solutions, args.nbgrader_source,
                                    overwrite=args.overwrite, writes=WRITES)
    if args.nbgrader_source:
        print(f"{args.out}: {len(args.chapters)} chapters in source/, the figures they link embedded in them")
    else:
        print(f"{args.out}: {len(args.chapters)} chapters and {figures} figures they link")
    return 0
