"""`albert-mini austen-tasks`: rebuild data/tasks/ (austen-mc, austen-span) byte for byte from the Austen corpus.

The tasks, their seeded build and their README are albert_mini.tasks.austen_tasks's (`build_all`).
"""

from __future__ import annotations

import time
from pathlib import Path

from ..cli import run as run_cli
from ..cli import seed as seed_type
from ..tasks.austen_tasks import SEED, TASKS_DIR, build_all, check_tasks_folder
from . import command_parser


def main(argv: list[str] | None = None) -> None:
    """Command line: rebuild data/tasks; bad input ends with one error line and exit status 2."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    parser = command_parser("austen-tasks",
                            description="Rebuild data/tasks/ (austen-mc, austen-span) from the Austen corpus.")
    parser.add_argument("--out", type=Path, default=TASKS_DIR, help="output folder (default: data/tasks)")
    parser.add_argument("--seed", type=seed_type, default=SEED)
    args = parser.parse_args(argv)
    check_tasks_folder(args.out)  # before the tasks are built
    started = time.perf_counter()
    counts = build_all(args.out, seed=args.seed)
    print(f"wrote {args.out} in {time.perf_counter() - started:.1f} s: {counts}")
