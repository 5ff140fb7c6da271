"""`python -m albert_mini.study.experiments NAME...|all|tables`: run experiments and write their results.

    python -m albert_mini.study.experiments all --seeds 0 1 2   # what `make experiments` runs (full settings)
    python -m albert_mini.study.experiments sentence_task       # one experiment (make experiment-sentence_task)
    python -m albert_mini.study.experiments all --estimate      # only print the expected duration
    python -m albert_mini.study.experiments tables              # markdown tables of the results, beside the paper's
    ALBERT_MINI_FAST=1 python -m albert_mini.study.experiments all   # seconds, for tests; writes to cache/

Each experiment writes data/results/<name>.json (per-seed values, mean and spread per cell, paired tests, and the
command, git revision, CPU, budget and wall time that produced them) and figures/experiment_<name>.png. Every
finished model is kept in data/results/experiment-runs/ as it ends: rerunning the same command after an interruption
skips what is done; other settings or other code never reuse a result.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from ...cli import Parser, seed
from ...cli import run as run_cli
from ...errors import MissingFileError, UsageError, UserError
from ...safe_files import check_out_folder
from . import EXPERIMENTS, OPT_IN, command_line, results_dir, run
from .budget import SEEDS, current_budget
from .estimate import describe, estimate
from .runs import RunCache, Runner, cache_dir


def main(argv: list[str] | None = None) -> int:
    """Command line: run experiments; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = Parser(prog="python -m albert_mini.study.experiments", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", choices=[*EXPERIMENTS, "all", "tables"],
                        help="experiments to run; `tables` prints markdown tables of the results in --out")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: data/results)")
    parser.add_argument("--seeds", type=seed, nargs="+", default=list(SEEDS),
                        help=f"seeds: every model is trained once per seed (default {' '.join(map(str, SEEDS))})")
    parser.add_argument("--estimate", action="store_true", help="print the expected duration and stop")
    parser.add_argument("--no-cache", action="store_true", help="train everything again (finished runs not reused)")
    args = parser.parse_args(argv)
    if "tables" in args.names and args.names != ["tables"]:
        raise UsageError("`tables` prints the results and runs nothing; give it alone, or drop it")
    if args.names == ["tables"]:
        print(checked_tables(args.out or results_dir()))
        return 0
    if len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0:
        raise UsageError(f"--seeds must be distinct non-negative integers, got {' '.join(map(str, args.seeds))}")
    if args.out is not None:
        check_out_folder(args.out)  # now, not after hours of training
    names = ([n for n in EXPERIMENTS if n not in OPT_IN] if "all" in args.names
             else [n for n in EXPERIMENTS if n in args.names])
    budget = current_budget()
    cache = None if args.no_cache else RunCache(cache_dir())
    report = estimate(names, EXPERIMENTS, budget, args.seeds, cache)
    print(f"{', '.join(names)}: {budget.tokens:,} training tokens per model ({budget.steps} steps), "
          f"seeds {' '.join(map(str, args.seeds))}", flush=True)
    print(describe(report), flush=True)
    if args.estimate:
        return 0
    total = sum(len(EXPERIMENTS[n].plan(budget, args.seeds)) for n in names if hasattr(EXPERIMENTS[n], "plan"))
    runner = Runner(budget, args.seeds, cache, total=total)
    start = time.perf_counter()
    for name in names:
        path = run(name, budget, out_dir=args.out, runner=runner, command=command_line())
        print(f"{name}: wrote {path} ({time.perf_counter() - start:.0f} s so far)", flush=True)
    print(f"done in {time.perf_counter() - start:.0f} s (estimated {report['seconds']:.0f} s) on {report['cpu']}")
    return 0


class ResultFileError(UserError, ValueError):
    """A result file that `tables` cannot read."""


def checked_tables(folder: Path) -> str:
    """`results_tables(folder)`, with a missing folder or a malformed result file as one error naming the file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingFileError(f"--out {folder} is not a folder of results; give the folder the experiments wrote "
                               f"(default {results_dir()})")
    tables = []
    for name, experiment in EXPERIMENTS.items():
        path = folder / f"{name}.json"
        if not path.exists():
            continue
        try:
            tables.append(experiment.table(json.loads(path.read_text(encoding="utf-8"))) + "\n")
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
            raise ResultFileError(f"{path} is not a result of the {name} experiment ({type(err).__name__}: {err}); "
                                  f"restore it (git checkout -- {path}) or run `python -m albert_mini.study."
                                  f"experiments {name}` again") from None
    if not tables:
        raise MissingFileError(f"{folder} holds no result files ({', '.join(f'{n}.json' for n in EXPERIMENTS)}); "
                               "run the experiments first, or give their folder with --out")
    return "\n".join(tables)


if __name__ == "__main__":
    sys.exit(main())
