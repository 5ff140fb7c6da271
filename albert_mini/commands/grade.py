"""`albert-mini grade SUBMISSIONS`: run every student's notebooks and write a gradebook (what `make grade` runs).

The grading (a fresh kernel per notebook, offline, each exercise checked where its check cell stands) is
albert_mini.book.grade's (`grade_class`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..book import grade
from ..cli import positive_float
from ..cli import run as run_cli
from ..errors import MissingFileError, UsageError
from ..safe_files import Writes, atomic_write_text
from . import command_parser

WRITES = Writes("grade", outputs="--out FILE, the gradebook CSV (default SUBMISSIONS/gradebook.csv; --overwrite to "
                "replace one)", inputs="SUBMISSIONS/ (every notebook in it)")


def main(argv: list[str] | None = None) -> int:
    """Command line: grade a folder of submissions; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = command_parser("grade", description=grade.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", type=Path, help="a folder with one sub-folder of notebooks per student")
    parser.add_argument("--out", type=Path, default=None, help="the gradebook CSV (default SUBMISSIONS/gradebook.csv)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing gradebook")
    parser.add_argument("--time-limit", type=positive_float, default=grade.DEFAULT_TIME_LIMIT,
                        help="seconds one notebook may run, kernel start included "
                             f"(default {grade.DEFAULT_TIME_LIMIT:g})")
    parser.add_argument("--chapters", nargs="+", default=None, metavar="NN",
                        help="grade only these chapters, e.g. --chapters 03 05 (default: every chapter handed in)")
    parser.add_argument("--full", action="store_true", help="run the chapters at full settings, not fast mode")
    args = parser.parse_args(argv)
    from ..book.exercises import chapters_with_exercises

    if not args.submissions.is_dir():
        raise MissingFileError(f"SUBMISSIONS {args.submissions} is not a folder; give the folder that holds one "
                               "sub-folder of notebooks per student (make grade SUBMISSIONS=path/to/folder)")
    known = chapters_with_exercises()
    unknown = [c for c in args.chapters or [] if c not in known]
    if unknown:
        raise UsageError(f"--chapters {' '.join(unknown)}: no such chapter with exercises; choose from "
                         f"{' '.join(known)}")
    out = args.out or args.submissions / "gradebook.csv"
    notebooks = [p for p in args.submissions.rglob("*") if p.suffix == ".ipynb"]
    WRITES.check(files=[("--out", out)], inputs=notebooks, overwrite=args.overwrite)
    start = time.monotonic()
    rows = grade.grade_class(args.submissions, args.time_limit, not args.full, args.chapters)
    atomic_write_text(out, grade.gradebook_text(rows))
    passed = sum(row.passed for row in rows)
    print(f"{out}: {len(rows)} rows, {passed} passed ({time.monotonic() - start:.0f} s)", flush=True)
    return 0
