"""`albert-mini numerics [--write]`: the run cache's guard values (albert_mini.harness.experiments.numerics).

Without --write it prints the values a few seeded steps of every kind of cached run give now; with --write it
records them in tests/study/numerics_guard.json, after a change that alters what a kind computes and a bump of that
kind's NUMERICS_VERSION (harness/experiments/runs.py).
"""

from __future__ import annotations

import argparse
import json

from ..cli import run as run_cli
from ..harness.experiments import numerics
from ..safe_files import Writes
from . import command_parser

WRITES = Writes("numerics", outputs="with --write: tests/study/numerics_guard.json", inputs="nothing on disk",
                regenerates="tests/study/numerics_guard.json, declaredly: --write exists to rewrite it")


def main(argv: list[str] | None = None) -> int:
    """Command line: print the guard values, or write them with --write."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = command_parser("numerics", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"record the values in {numerics.GUARD_FILE.name}")
    args = parser.parse_args(argv)
    if args.write:  # before the values are measured
        WRITES.check(files=[("--write", numerics.GUARD_FILE)], overwrite=True, regenerates=[numerics.GUARD_FILE])
    values = numerics.guard_values()
    if args.write:
        print(f"wrote {numerics.write_guard(values)}")
    else:
        print(json.dumps(values, indent=1))
    return 0
