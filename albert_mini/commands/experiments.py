"""`albert-mini experiments NAME...|all|tables`: run experiments and write their results.

    albert-mini experiments all --seeds 0 1 2   # what `make experiments` runs (full settings)
    albert-mini experiments sentence_task       # one experiment (make experiment-sentence_task)
    albert-mini experiments all --estimate      # only print the expected duration
    albert-mini experiments tables              # markdown tables of the results, beside the paper's
    ALBERT_MINI_FAST=1 albert-mini experiments all   # seconds, for tests; writes to cache/

Each experiment writes data/results/<name>.json (per-seed values, mean and spread per cell, paired tests, and the
command, git revision, CPU, budget and wall time that produced them) and figures/experiment_<name>.png. Every
finished model is kept in data/results/experiment-runs/ as it ends: rerunning the same command after an interruption
skips what is done; other settings or other code never reuse a result. The experiments are albert_mini.study.
experiments (one module each).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..choices import DEVICE_CHOICES
from ..cli import run as run_cli
from ..cli import seed
from ..errors import UsageError
from ..harness.choices import EXPERIMENT_NAMES, SEEDS
from ..paths import CACHE_ROOT, DATA_ROOT, FIGURES_ROOT
from ..safe_files import Writes
from ..settings import fast_mode
from ..tasks.austen_tasks import TASKS_DIR
from . import command_parser

WRITES = Writes("experiments", outputs="--out DIR (default data/results): NAME.json per experiment; its figure "
                "figures/experiment_NAME.png (fast mode: under cache/); finished runs in the run cache (--overwrite to "
                "replace results in another --out)", inputs="the Austen corpus and tasks, the run cache",
                regenerates="data/results/NAME.json, data/results/experiment-runs/ and figures/experiment_NAME.png, "
                            "declaredly: the command exists to rebuild them")


def outputs(names: list[str], out: Path, budget) -> list[tuple[str, Path]]:
    """(flag, path) of the files that running `names` writes: each result, and its figure (run() puts a figure of
    the full budget in the book's figures folder, fast mode's cache folder in fast mode, others beside the JSON)."""
    from ..harness.experiments.budget import FULL

    figures = (CACHE_ROOT / "figures-fast" if fast_mode() else FIGURES_ROOT) if budget == FULL else out
    return [item for name in names for item in (("--out", out / f"{name}.json"),
                                                 ("its figure", figures / f"experiment_{name}.png"))]


def main(argv: list[str] | None = None) -> int:
    """Command line: run experiments; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def seeds_line(experiments: dict, seeds: list[int], given: bool) -> str:
    """The seeds the command runs, as its header prints them; a pre-registered plan that fixes its own seeds
    (`PLAN_SEEDS`, full settings) is shown with them, and other --seeds given for it are refused in one line."""
    fixed = {name: module.PLAN_SEEDS for name, module in experiments.items() if hasattr(module, "PLAN_SEEDS")}
    for name, plan_seeds in fixed.items():
        if given and sorted(seeds) != sorted(plan_seeds):
            raise UsageError(f"{name} runs the seeds its pre-registered plan fixes ({' '.join(map(str, plan_seeds))}), "
                             f"not --seeds {' '.join(map(str, seeds))}: drop --seeds (or give it those)")
    return " ".join(map(str, seeds)) + "".join(f" ({name}: {' '.join(map(str, s))}, as its plan fixes)"
                                               for name, s in fixed.items() if list(s) != seeds)


def _main(argv: list[str]) -> int:
    parser = command_parser("experiments", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", choices=[*EXPERIMENT_NAMES, "all", "tables"],
                        help="experiments to run; `tables` prints markdown tables of the results in --out")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: data/results)")
    parser.add_argument("--seeds", type=seed, nargs="+", default=None,
                        help=f"seeds: every model is trained once per seed (default {' '.join(map(str, SEEDS))})")
    parser.add_argument("--estimate", action="store_true", help="print the expected duration and stop")
    parser.add_argument("--no-cache", action="store_true", help="train everything again (finished runs not reused)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace result files in a non-default --out that this run did not write")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default="auto",
                        help="where to train: auto = a CUDA GPU if there is one, else Apple's GPU (MPS), else the CPU "
                             "(default); every run records its device, and finished runs count on any device")
    args = parser.parse_args(argv)
    # The experiments load torch (seconds): imported once the flags are read, so --help answers at once.
    from ..harness.experiments import EXPERIMENTS, OPT_IN, checked_tables, command_line, own_outputs, results_dir, run
    from ..harness.experiments.budget import FAST, current_budget
    from ..harness.experiments.estimate import describe, estimate
    from ..harness.experiments.provenance import use_device
    from ..harness.experiments.runs import RunCache, Runner, cache_dir

    if "tables" in args.names and args.names != ["tables"]:
        raise UsageError("`tables` prints the results and runs nothing; give it alone, or drop it")
    if args.names == ["tables"]:
        print(checked_tables(args.out or results_dir()))
        return 0
    seeds_given, args.seeds = args.seeds is not None, args.seeds or list(SEEDS)
    if len(set(args.seeds)) != len(args.seeds) or min(args.seeds) < 0:
        raise UsageError(f"--seeds must be distinct non-negative integers, got {' '.join(map(str, args.seeds))}")
    names = ([n for n in EXPERIMENTS if n not in OPT_IN] if "all" in args.names
             else [n for n in EXPERIMENTS if n in args.names])
    budget = current_budget()
    shown = seeds_line({n: EXPERIMENTS[n] for n in names} if budget is not FAST else {}, args.seeds, seeds_given)
    out = args.out or results_dir()
    regenerating = out.resolve() == results_dir().resolve()  # the results this command exists to rebuild
    figures = [FIGURES_ROOT / f"experiment_{n}.png" for n in names]  # the book's, which this command draws
    WRITES.check(folders=[("--out", out)], files=[] if args.estimate else outputs(names, out, budget),
                 inputs=[DATA_ROOT / "austen", TASKS_DIR], overwrite=args.overwrite or regenerating,
                 regenerates=[results_dir(), *figures], own=[*figures, *own_outputs(out)])  # now, not in hours
    use_device(args.device)  # a device that is not here is refused now
    cache = None if args.no_cache else RunCache(cache_dir())
    report = estimate(names, EXPERIMENTS, budget, args.seeds, cache)
    print(f"{', '.join(names)}: {budget.tokens:,} training tokens per model ({budget.setup().steps} steps), "
          f"seeds {shown}", flush=True)
    print(describe(report), flush=True)
    if args.estimate:
        return 0
    total = sum(len(EXPERIMENTS[n].plan(budget, args.seeds)) for n in names if hasattr(EXPERIMENTS[n], "plan"))
    runner = Runner(budget, args.seeds, cache, total=total)
    start = time.perf_counter()
    for name in names:
        path = run(name, budget, out_dir=args.out, runner=runner, command=command_line(argv))
        print(f"{name}: wrote {path} ({time.perf_counter() - start:.0f} s so far)", flush=True)
    print(f"done in {time.perf_counter() - start:.0f} s (estimated {report['seconds']:.0f} s) on {report['cpu']}")
    return 0
