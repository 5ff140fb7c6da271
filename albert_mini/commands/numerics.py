"""`albert-mini numerics [--write [--force]]`: the run cache's guard values (albert_mini.harness.experiments.numerics).

Without --write it prints the values a few seeded steps of every kind of cached run give now; with --write it
records them in tests/study/numerics_guard.json, after a change that alters what a kind computes and a bump of that
kind's NUMERICS_VERSION (harness/experiments/runs.py). It says which values changed and by how much; values that
differ only within the guard's tolerance (this machine's last digits) are kept as recorded, and values that moved
while their kind's version did not are refused, unless --force.
"""

from __future__ import annotations

import argparse
import json

from ..cli import run as run_cli
from ..errors import UsageError
from ..harness.choices import GUARD_FILE
from ..safe_files import Writes
from . import command_parser

WRITES = Writes("numerics", outputs="with --write: tests/study/numerics_guard.json", inputs="nothing on disk",
                regenerates="tests/study/numerics_guard.json, declaredly: --write exists to rewrite it")


def main(argv: list[str] | None = None) -> int:
    """Command line: print the guard values, or write them with --write."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = command_parser("numerics", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"record the values in {GUARD_FILE.name}")
    parser.add_argument("--force", action="store_true",
                        help="with --write: record every measured value, also those within the tolerance and those "
                        "of a kind whose version was not bumped")
    args = parser.parse_args(argv)
    from ..harness.experiments import numerics  # torch: once the flags are read

    if args.force and not args.write:
        raise UsageError("--force only goes with --write; add --write to record the values")
    if args.write:  # before the values are measured
        WRITES.check(files=[("--write", numerics.GUARD_FILE)], overwrite=True, regenerates=[numerics.GUARD_FILE])
    values = numerics.guard_values()
    if not args.write:
        print(json.dumps(values, indent=1))
        return 0
    guard = numerics.GUARD_FILE
    try:
        recorded = json.loads(guard.read_text(encoding="utf-8")) if guard.exists() else {}
    except (OSError, ValueError) as err:
        print(f"{guard} could not be read ({err}); every value is recorded anew")
        recorded = {}
    recorded = recorded if isinstance(recorded, dict) else {}
    changes = numerics.guard_changes(recorded, values)
    for line in changes.lines:
        print(line)
    shown = ", ".join
    if changes.unbumped and not args.force:
        raise UsageError(f"{shown(changes.unbumped)} moved beyond the tolerance while NUMERICS_VERSION kept its "
                         f"recorded value, so their cached runs would stand for other numbers; nothing written: bump "
                         "the version in albert_mini/harness/experiments/runs.py first, or pass --force")
    if not changes.moved and not changes.dropped and not (args.force and changes.rounding):
        if changes.rounding:
            raise UsageError(f"{shown(changes.rounding)} differ from {guard.name} only within the guard's tolerance "
                             f"(relative {numerics.TOLERANCE:g}), this machine's last digits; nothing written: pass "
                             "--force to record them anyway")
        print(f"{guard}: every value as recorded; nothing written")
        return 0
    if changes.rounding and not args.force:
        print(f"kept as recorded: {shown(changes.rounding)} (only within the tolerance; --force records them)")
    print(f"wrote {numerics.write_guard(changes.guard(recorded, values, force=args.force))}")
    return 0
