"""`albert-mini grade SUBMISSIONS`: grade every student's notebooks in a sandbox and write a gradebook.

What `make grade SUBMISSIONS=...` runs; albert_mini.book.grade does the grading (see its docstring).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..book.grade_bounds import Limits
from ..choices import DEFAULT_MEMORY_GB, DEFAULT_TIME_LIMIT
from ..cli import INTERRUPTED_STATUS, positive_float
from ..cli import run as run_cli
from ..errors import MissingFileError, UsageError
from ..paths import sha256_bytes
from ..safe_files import OutputRecord, Writes, atomic_write_bytes, atomic_write_text
from . import command_parser, docstring_of

WRITES = Writes("grade", outputs="--out FILE, the gradebook CSV (default SUBMISSIONS/gradebook.csv; a rerun "
                "replaces its own, --overwrite any other), its journal .FILE.journal.jsonl and FILE-feedback/ "
                "(one STUDENT.md each) beside it",
                inputs="SUBMISSIONS/ (every notebook in it)")


def main(argv: list[str] | None = None) -> int:
    """Command line: grade a folder of submissions; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def _main(argv: list[str]) -> int:
    parser = command_parser("grade", description=docstring_of("book.grade"),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", type=Path, help="a folder with one sub-folder of notebooks per student")
    parser.add_argument("--out", type=Path, default=None, help="the gradebook CSV (default SUBMISSIONS/gradebook.csv)")
    parser.add_argument("--overwrite", action="store_true", help="replace a gradebook this command did not write")
    parser.add_argument("--time-limit", type=positive_float, default=DEFAULT_TIME_LIMIT,
                        help="seconds one notebook may run, kernel start included "
                             f"(default {DEFAULT_TIME_LIMIT:g})")
    parser.add_argument("--chapters", nargs="+", default=None, metavar="NN",
                        help="grade only these chapters, e.g. --chapters 03 05; a student without one of them "
                             "gets 'missing' rows (default: every chapter handed in, no 'missing' rows)")
    parser.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1,
                        help="notebooks graded side by side (default: the number of cores)")
    parser.add_argument("--memory-limit", type=positive_float, default=DEFAULT_MEMORY_GB, metavar="GB",
                        help=f"memory one notebook may use, in GB (default {DEFAULT_MEMORY_GB:g})")
    parser.add_argument("--process-limit", type=_positive_int, default=Limits.processes, metavar="N",
                        help=f"processes one notebook may run at once (default {Limits.processes})")
    parser.add_argument("--scratch-limit", type=_positive_int, default=Limits.scratch_mb, metavar="MB",
                        help="the notebook's writable folder, a tmpfs counted in its memory where a cgroup is "
                             f"available (default {Limits.scratch_mb})")
    parser.add_argument("--tmp-limit", type=_positive_int, default=Limits.tmp_mb, metavar="MB",
                        help=f"its /tmp, and its /dev/shm as much again, tmpfs (default {Limits.tmp_mb})")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="grade without bubblewrap (student code then runs with your rights; every row says so)")
    parser.add_argument("--full", action="store_true", help="run the chapters at full settings, not fast mode")
    parser.add_argument("--keep-runs", type=Path, default=None, metavar="FOLDER",
                        help="copy each executed notebook (as graded, with its outputs) to FOLDER/student/, a new "
                             "or empty folder")
    args = parser.parse_args(argv)
    from ..book import grade, grade_bounds  # numpy (the answers' arrays): once the flags are read
    from ..book.exercises import chapters_with_exercises

    if not args.submissions.is_dir():
        raise MissingFileError(f"SUBMISSIONS {args.submissions} is not a folder; give the folder that holds one "
                               "sub-folder of notebooks per student (make grade SUBMISSIONS=path/to/folder)")
    known = chapters_with_exercises()
    chapters = [c.zfill(2) for c in args.chapters] if args.chapters else None
    unknown = [c for c in chapters or [] if c not in known]
    if unknown:
        raise UsageError(f"--chapters {' '.join(unknown)}: no such chapter with exercises; choose from "
                         f"{' '.join(known)}")
    out = args.out or args.submissions / "gradebook.csv"
    journal_file = grade.journal_path(out)
    record = OutputRecord(out.parent, "grade")
    notebooks = [p for p in args.submissions.rglob("*.ipynb") if not p.is_symlink()]
    WRITES.check(files=[("--out", out), ("--out", journal_file)] if not journal_file.exists() else
                 [("--out", out)], inputs=notebooks, overwrite=args.overwrite, own=record.own(),
                 overwrite_flag="--overwrite (OVERWRITE=1 with make grade)")
    if not args.no_sandbox:
        problem = grade.sandbox_problem()
        if problem:
            raise grade.SandboxUnavailable(f"{problem}; student notebooks run code, so grading needs it. Install "
                                           "it, or pass --no-sandbox to grade without one (NO_SANDBOX=1 with make "
                                           "grade; every row then says so)")
    if args.keep_runs is not None and args.keep_runs.exists() and (
            not args.keep_runs.is_dir() or any(args.keep_runs.iterdir())):
        raise UsageError(f"--keep-runs {args.keep_runs} exists and is not an empty folder; give a new folder")
    jobs = min(args.jobs, max(1, len(notebooks)))
    settings = grade.Settings(time_limit=args.time_limit, fast=not args.full, sandbox=not args.no_sandbox,
                              memory_gb=args.memory_limit, threads=max(1, (os.cpu_count() or 1) // jobs),
                              keep_runs=args.keep_runs, processes=args.process_limit, scratch_mb=args.scratch_limit,
                              tmp_mb=args.tmp_limit)
    missing = grade_bounds.unavailable(settings.limits()) if settings.sandbox else None
    if missing:
        print(missing, flush=True)
    journal = grade.Journal(journal_file)
    start = time.monotonic()
    try:
        rows = grade.grade_class(args.submissions, settings, chapters, jobs, journal)
    except KeyboardInterrupt:
        print(f"error: interrupted (Ctrl-C); the {len(journal.done)} notebooks graded so far are kept in "
              f"{journal_file}, and the same command continues from there", file=sys.stderr, flush=True)
        return INTERRUPTED_STATUS
    text = grade.gradebook_text(rows)
    pages = {grade.feedback_folder(out) / f"{student}.md": page for student, page in grade.feedback_texts(rows).items()}
    own = set(record.own())
    kept = [path for path in pages if os.path.lexists(path) and path not in own and not args.overwrite]
    pages = {path: page for path, page in pages.items() if path not in kept}
    record.expect({out: sha256_bytes(text.encode("utf-8")),  # a kill from here on leaves them ours
                   **{path: sha256_bytes(page.encode("utf-8", "surrogateescape")) for path, page in pages.items()}})
    atomic_write_text(out, text)
    record.add(out)
    grade.feedback_folder(out).mkdir(exist_ok=True)
    for path, page in pages.items():
        atomic_write_bytes(path, page.encode("utf-8", "surrogateescape"))
        record.add(path)
    record.save()
    if kept:
        print(f"note: kept {len(kept)} feedback files that grade did not write (--overwrite replaces them), e.g. "
              f"{kept[0]}", flush=True)
    passed = sum(row.passed for row in rows)
    print(f"{out}: {len(rows)} rows, {passed} passed ({time.monotonic() - start:.0f} s); one feedback page per "
          f"student in {grade.feedback_folder(out)}/", flush=True)
    return 0
