"""`python -m albert_mini.study.experiments NAME|all|tables`: run experiments and write their results.

    python -m albert_mini.study.experiments all               # what `make experiments` runs (full settings)
    python -m albert_mini.study.experiments sentence_task     # one experiment (make experiment-sentence_task)
    python -m albert_mini.study.experiments tables            # markdown tables of the results, beside the paper's
    ALBERT_MINI_FAST=1 python -m albert_mini.study.experiments all   # seconds, for tests; writes to cache/

Each experiment writes data/results/<name>.json (the numbers with the command, git revision, seed and budget that
produced them) and figures/experiment_<name>.png.
"""

import argparse
import sys
import time
from pathlib import Path

from ...cli import Parser, run as run_cli
from . import EXPERIMENTS, results_dir, results_tables, run


def main(argv: list[str] | None = None) -> int:
    """Command line: run experiments; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = Parser(prog="python -m albert_mini.study.experiments", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", choices=[*EXPERIMENTS, "all", "tables"],
                        help="experiments to run; `tables` prints markdown tables of the results in --out")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: data/results)")
    args = parser.parse_args(argv)
    if args.names == ["tables"]:
        print(results_tables(args.out or results_dir()))
        return 0
    names = list(EXPERIMENTS) if "all" in args.names else args.names
    start = time.perf_counter()
    for name in names:
        path = run(name, out_dir=args.out)
        print(f"{name}: wrote {path} ({time.perf_counter() - start:.0f} s so far)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
