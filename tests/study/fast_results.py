"""Each experiment run once per test session on the fast budget, shared by every test module and xdist worker.

The experiments fall into families that share runs (the Table 5 trunk; the Table 3-4 models). A family computes
under its own file lock in a folder every worker of the session sees, so two workers run two families at once,
and a module that needs a family another worker is computing waits for it instead of computing it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
from pathlib import Path

from albert_mini.harness import experiments
from albert_mini.harness.experiments.budget import FAST, TOKENS_PER_MODEL
from albert_mini.harness.experiments.runs import RunCache
from albert_mini.paths import REPO_ROOT

TEST_SEEDS = (0, 1)  # two seeds: enough for a spread, half the time of the default three
FAMILIES = {
    "trunk": ("sentence_task", "sop_levers", "sop_escape", "sop_supervised"),  # one fast trunk, branched four ways
    "scratch": ("sentence_scratch",),
    "tables": ("sharing", "embedding_size", "smoothness", "finetune"),
    "speed": ("throughput", "memory"),
    "language": ("sop_language",),  # the built language: no Austen, its own small runs
}


def family_of(name: str) -> str:
    return next(family for family, names in FAMILIES.items() if name in names)


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


def fast_result(name: str, tmp_path_factory) -> dict:
    """Experiment `name`'s fast result (seeds 0 and 1), computed by the first module of the session that asks."""
    family = family_of(name)
    with session_lock(tmp_path_factory, family) as root:
        out = root / "results"
        out.mkdir(exist_ok=True)
        path = out / f"{name}.json"
        if not path.exists():
            experiments.run(name, FAST, out, seeds=TEST_SEEDS, cache=RunCache(root / f"runs-{family}"))
        return json.loads(path.read_text())


def fast_results(names, tmp_path_factory) -> dict[str, dict]:
    return {name: fast_result(name, tmp_path_factory) for name in names}


def check_provenance_and_figure(name: str, result: dict) -> None:
    """A result names its experiment, command, revision, budget and seeds, and its figure has data."""
    meta = result["meta"]
    assert meta["experiment"] == name and meta["fast_mode"] is True
    assert meta["command"] == f"albert-mini experiments {name}"
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert meta["git_revision"].split("+")[0] == head.stdout.strip() and len(meta["git_revision"]) >= 7
    describe = getattr(experiments.EXPERIMENTS[name], "describe_budget", None)
    if describe:  # an experiment with plans of its own records them, not the Tables 3-4 budget
        assert meta["budget"] == json.loads(json.dumps(describe(FAST)))
    else:
        assert meta["budget"]["steps"] == FAST.setup().steps and meta["budget"]["tokens"] == TOKENS_PER_MODEL["fast"]
    assert meta["seeds"][:2] == list(TEST_SEEDS) and meta["cpu"] and meta["wall_seconds"] >= 0
    fig = experiments.EXPERIMENTS[name].figure(result)
    assert fig.axes and fig.axes[0].has_data()
