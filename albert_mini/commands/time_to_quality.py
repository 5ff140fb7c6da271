"""`albert-mini time-to-quality results OLD_RUN_DIR NEW_RUN_DIR`: held-out accuracy against minutes and tokens.

The reading of the two runs is albert_mini.harness.research.time_to_quality's (`write_results`); the race itself is
`python benchmarks/time_to_quality.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..cli import run as run_cli
from ..paths import DATA_ROOT, FIGURES_ROOT
from ..safe_files import Writes
from . import command_parser, docstring_of

WRITES = Writes("time-to-quality", outputs="results: --out FILE and --figure FILE (--overwrite to replace them)",
                inputs="the OLD and NEW run directories",
                regenerates="data/results/time_to_quality.json and figures/time_to_quality.png, with --overwrite")
SHIPPED = [DATA_ROOT / "results" / "time_to_quality.json", FIGURES_ROOT / "time_to_quality.png"]


def main(argv: list[str] | None = None):
    """Command line; bad arguments end with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]):
    p = command_parser("time-to-quality", description=docstring_of("harness.research.time_to_quality").split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    results = sub.add_parser("results", help="time_to_quality.json and its figure from two run directories")
    results.error = p.error
    results.add_argument("old", help="run directory of the old recipe (e.g. data/results/classroom-model-v1)")
    results.add_argument("new", help="run directory of the new recipe (e.g. data/results/classroom-model-v2)")
    results.add_argument("--out", default=str(SHIPPED[0]), help="default data/results/time_to_quality.json")
    results.add_argument("--figure", default=str(SHIPPED[1]), help="default figures/time_to_quality.png")
    results.add_argument("--machine", default=None,
                         help="the CPU the two runs trained on, which their minutes are of (default: this machine's)")
    results.add_argument("--overwrite", action="store_true", help="replace existing --out and --figure files")
    args = p.parse_args(argv)
    WRITES.check(files=[("--out", args.out), ("--figure", args.figure)], inputs=[args.old, args.new],
                 overwrite=args.overwrite, regenerates=SHIPPED)
    from ..harness.experiments.provenance import command_line  # torch: once the flags are read
    from ..harness.research import time_to_quality

    result = time_to_quality.write_results(Path(args.old), Path(args.new), Path(args.out), Path(args.figure),
                                           command_line("time-to-quality", argv), args.machine)
    print(json.dumps({k: result[k] for k in ("at_common_minutes", "tokens_to_old_final_mlm")}, indent=1))
    return result
