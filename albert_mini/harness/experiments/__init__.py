"""The paper's findings at mini scale: one module per experiment (plan, run, figure, table), registered by name."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from types import ModuleType

from ...errors import MissingFileError, UserError, lookup
from ...paths import save_figure
from ..choices import EXPERIMENT_NAMES, SEEDS
from . import provenance
from .budget import FULL, Budget, current_budget, results_dir
from .provenance import write_result
from .runs import RunCache, Runner, cache_dir

# Adding an experiment: a module with run(runner) -> dict, figure(result) -> Figure and table(result) -> str (and
# plan(budget, seeds) -> its runs, when it trains models), and its name in EXPERIMENT_NAMES (harness/choices.py,
# where the command line reads the names without torch). `all` runs them in that order, except those in OPT_IN.
EXPERIMENTS: dict[str, ModuleType] = {name: import_module(f"{__name__}.{name}") for name in EXPERIMENT_NAMES}
# Run only when named: 45,000 training steps, meant for a GPU machine (see its module); Stage A's screen of levers
# against SOP's plateau and its Stage B (the control row's escape rate), whose runs follow their own pre-registered
# rules.
OPT_IN = ("sentence_scratch", "sop_levers", "sop_escape", "sop_supervised", "sop_language")


def run(name: str, budget: Budget | None = None, out_dir: Path | None = None, seeds=SEEDS,
        cache: RunCache | None | bool = True, runner: Runner | None = None, command: str | None = None) -> Path:
    """Run experiment `name`, write <out_dir>/<name>.json and its figure; returns the JSON's path.

    Finished runs are kept in `cache` (True: the mode's folder under cache/; a RunCache; None or False: none), so
    an interrupted experiment resumes where it stopped. Figures of the full budget go to
    figures/experiment_<name>.png; other budgets keep theirs beside the JSON.
    """
    experiment = lookup(EXPERIMENTS, name, "experiment")
    budget = budget or current_budget()
    if runner is None:
        store = RunCache(cache_dir()) if cache is True else (cache or None)
        runner = Runner(budget, seeds, store)
    runner.experiment = name
    start = time.perf_counter()
    payload = experiment.run(runner)
    describe = getattr(experiment, "describe_budget", None)  # an experiment with plans of its own
    path = write_result(name, payload, budget, payload.get("seeds", runner.seeds), out_dir or results_dir(),
                        time.perf_counter() - start, command, runner.compute_seconds.get(name),
                        sorted(runner.devices.get(name, ())), describe(budget) if describe else None)
    fig = experiment.figure(json.loads(path.read_text()))  # drawn from what was written, as a reader sees it
    figure = save_figure(fig, f"experiment_{name}.png", None if budget == FULL else path.parent)
    import matplotlib.pyplot as plt

    plt.close(fig)  # a run of every experiment would otherwise keep each figure open
    if out_dir is not None and out_dir.resolve() != results_dir().resolve():
        record_outputs(out_dir, [path, figure])
    return path


RECORD_COMMAND = "experiments"  # the command whose outputs a folder's record lists (safe_files.OutputRecord)


def record_outputs(folder: Path, paths: list[Path]) -> None:
    """List the files just written into a --out folder of the user's as this command's own, so that the same
    command run again replaces them instead of refusing them as someone else's (a file changed since is not
    listed as it is, so it stays refused)."""
    from ...safe_files import OutputRecord

    record = OutputRecord(folder, RECORD_COMMAND)
    for path in paths:
        if Path(path).resolve().parent == Path(folder).resolve():
            record.add(path)
    record.save()


def own_outputs(folder: Path) -> list[Path]:
    """The files of `folder` an earlier run of this command wrote and nobody changed since."""
    from ...safe_files import OutputRecord

    return OutputRecord(folder, RECORD_COMMAND).own() if Path(folder).is_dir() else []


def results_tables(folder: Path) -> str:
    """Markdown tables of every result in `folder`, each next to the paper's numbers."""
    tables = []
    for name, experiment in EXPERIMENTS.items():
        path = Path(folder) / f"{name}.json"
        if path.exists():
            tables.append(experiment.table(json.loads(path.read_text())) + "\n")
    return "\n".join(tables)


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
                                  f"restore it (git checkout -- {path}) or run `albert-mini experiments {name}` "
                                  "again") from None
    if not tables:
        raise MissingFileError(f"{folder} holds no result files ({', '.join(f'{n}.json' for n in EXPERIMENTS)}); "
                               "run the experiments first, or give their folder with --out")
    return "\n".join(tables)


def command_line(argv: Sequence[str]) -> str:
    """The command as typed (`albert-mini experiments ARGV...`), for provenance."""
    return provenance.command_line("experiments", argv)
