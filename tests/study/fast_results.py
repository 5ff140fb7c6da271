"""Every experiment's result on the fast budget (seeds 0 and 1) as a committed record, and what the tests of the
harness's tables, figures and chapter readers check on it.

The records (tests/fixtures/experiment_records/, written by tests/fixtures/make_experiment_records.py) stand in for
training every fast model in every test session; one end-to-end run (test_experiments.py) trains an experiment,
checks its provenance against the checkout and that it writes what its record holds, so that a record left behind
by a change to its experiment fails. The fast trunk's checkpoint, which the tests of Table 5's branches resume from,
is still trained once per session under a lock every xdist worker sees (session_lock, fast_branches.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from pathlib import Path

from albert_mini.harness import experiments
from albert_mini.harness.experiments.budget import FAST, TOKENS_PER_MODEL
from albert_mini.paths import REPO_ROOT

TEST_SEEDS = (0, 1)  # the records' seeds: enough for a spread and a paired difference
RECORDS = REPO_ROOT / "tests" / "fixtures" / "experiment_records"


def fast_result(name: str) -> dict:
    """Experiment `name`'s committed fast result."""
    return json.loads((RECORDS / f"{name}.json").read_text())


def fast_results(names) -> dict[str, dict]:
    return {name: fast_result(name) for name in names}


def shared_root(tmp_path_factory) -> Path:
    """A folder for this session: under xdist, beside every worker's own base folder (their common parent)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "fast-experiments"
    root.mkdir(exist_ok=True)
    return root


@contextlib.contextmanager
def session_lock(tmp_path_factory, name: str):
    """The session's shared folder, held under the lock `name`: the first worker to ask computes what the lock
    guards, the others wait and then read it."""
    root = shared_root(tmp_path_factory)
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the computation raises
        yield root


def check_provenance_and_figure(name: str, result: dict, seeds=TEST_SEEDS, revision: str | None = None) -> None:
    """A result names its experiment, command, revision (`revision` when given), budget and seeds, and its figure
    has data."""
    meta = result["meta"]
    assert meta["experiment"] == name and meta["fast_mode"] is True
    assert meta["command"] == f"albert-mini experiments {name}"
    assert re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", meta["git_revision"]), meta["git_revision"]
    if revision is not None:
        assert meta["git_revision"].split("+")[0] == revision
    describe = getattr(experiments.EXPERIMENTS[name], "describe_budget", None)
    if describe:  # an experiment with plans of its own records them, not the Tables 3-4 budget
        assert meta["budget"] == json.loads(json.dumps(describe(FAST)))
    else:
        assert meta["budget"]["steps"] == FAST.setup().steps and meta["budget"]["tokens"] == TOKENS_PER_MODEL["fast"]
    assert meta["seeds"][:len(seeds)] == list(seeds) and meta["cpu"] and meta["wall_seconds"] >= 0
    fig = experiments.EXPERIMENTS[name].figure(result)
    try:
        assert fig.axes and fig.axes[0].has_data()
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def kind(value) -> str:
    return "number" if isinstance(value, int | float) and not isinstance(value, bool) else type(value).__name__


def shape_differences(written, recorded, path: str = "result") -> list[str]:
    """Where `written` holds other keys or other kinds of values than `recorded`, numbers aside: a mapping's keys
    (its seeds' keys compared by their first seed's contents), a list's first item, each leaf's kind (None stands
    for any)."""
    if written is None or recorded is None:
        return []
    if kind(written) != kind(recorded):
        return [f"{path}: {kind(written)} written, {kind(recorded)} recorded"]
    if isinstance(written, list):
        return shape_differences(written[0], recorded[0], f"{path}[0]") if written and recorded else []
    if not isinstance(written, dict):
        return []
    names = [{key for key in value if not key.isdigit()} for value in (written, recorded)]
    seeds = [[key for key in value if key.isdigit()] for value in (written, recorded)]
    differences = [f"{path}.{key} only written" for key in sorted(names[0] - names[1])]
    differences += [f"{path}.{key} only recorded" for key in sorted(names[1] - names[0])]
    for key in sorted(names[0] & names[1]):
        differences += shape_differences(written[key], recorded[key], f"{path}.{key}")
    if bool(seeds[0]) != bool(seeds[1]):
        differences.append(f"{path}: numbered keys on one side only")
    elif seeds[0]:
        differences += shape_differences(written[seeds[0][0]], recorded[seeds[1][0]], f"{path}.<seed>")
    return differences
