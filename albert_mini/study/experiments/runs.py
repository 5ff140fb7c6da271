"""Running an experiment's models: a cache of finished runs (so an interrupted run resumes), progress lines, and
the time estimate printed before anything starts.

Cache key: the sha256 of a run's settings (model config, sentence task or fine-tuning task, seed, budget) together
with a fingerprint of the code and data that compute it (every module the experiments package imports, directly or
not, read from the source by albert_mini.import_graph, and the Austen and task manifests). Settings that differ
never share a result, and neither do two versions of that code; a commit that changes only chapters, docs, tests
or modules the experiments never run (the model card, the book) keeps the cache valid.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from ...import_graph import closure, module_files
from ...paths import CACHE_ROOT, DATA_ROOT
from ...settings import fast_mode
from .common import Budget, Pretraining, measure

PACKAGE = Path(__file__).resolve().parents[2]
EXPERIMENTS_PACKAGE = __name__.rpartition(".")[0]  # albert_mini.study.experiments
KEY_RULE = ("sha256 of the run's settings (config, task, seed, budget) and of the code and data that compute it "
            "(every albert_mini module the experiments import, data/austen and data/tasks manifests)")


def cache_dir() -> Path:
    """Where finished runs are kept: full runs in data/results/experiment-runs/ (committed, so a run that takes
    longer than one sitting continues on another machine), fast runs in the git-ignored cache/."""
    return CACHE_ROOT / "experiment-runs-fast" if fast_mode() else DATA_ROOT / "results" / "experiment-runs"


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """sha256 over the source of every module the experiments may run (their import closure) and the data
    manifests."""
    digest = hashlib.sha256()
    files = module_files()
    for name in sorted(closure(EXPERIMENTS_PACKAGE)):
        path = files[name]
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    for manifest in sorted(DATA_ROOT.glob("*/SHA256SUMS")):
        digest.update(manifest.read_bytes())
    return digest.hexdigest()


class RunCache:
    """Finished runs as <folder>/<key>.json, written atomically the moment each run ends."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def key(self, spec: dict) -> str:
        text = json.dumps(spec, sort_keys=True, default=str) + code_fingerprint()
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def load(self, spec: dict) -> dict | None:
        record = self.load_record(spec)
        return record["result"] if record else None

    def load_record(self, spec: dict) -> dict | None:
        """The stored {"spec", "result", "seconds"} of `spec`, or None."""
        path = self.folder / f"{self.key(spec)}.json"
        if not path.exists():
            return None
        stored = json.loads(path.read_text())
        return stored if stored.get("spec") == json.loads(json.dumps(spec, default=str)) else None

    def save(self, spec: dict, result: dict, seconds: float | None = None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{self.key(spec)}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"spec": spec, "result": result, "seconds": seconds}, default=float))
        os.replace(tmp, path)  # a run killed while writing leaves no half file under the key


class Runner:
    """What an experiment's run() gets: the budget, the seeds, the cache of finished runs and a progress line."""

    def __init__(self, budget: Budget, seeds=(0,), cache: RunCache | None = None, say: Callable = print,
                 total: int | None = None):
        if not seeds:
            raise ValueError("give at least one seed, e.g. --seeds 0 1 2")
        self.budget, self.seeds, self.cache, self.say = budget, tuple(seeds), cache, say
        self.total, self.done, self.ran, self.start = total, 0, 0, time.perf_counter()
        self.experiment = ""
        # Seconds each run used took when it was computed, in whichever sitting: what the results cost in all.
        self.compute_seconds: dict[str, float] = {}

    def cached(self, spec: dict, compute: Callable[[], dict], label: str,
               complete: Callable[[dict], bool] = lambda r: True) -> dict:
        """The cached result of `spec`, or compute it, save it and report progress."""
        record = self.cache.load_record(spec) if self.cache else None
        result, seconds = (record["result"], record.get("seconds")) if record else (None, None)
        start = time.perf_counter()
        status = "cached"
        if result is None or not complete(result):
            result, status = compute(), "ran"
            seconds = time.perf_counter() - start
            self.ran += 1
            if self.cache:
                self.cache.save(spec, result, seconds)
        self.compute_seconds[self.experiment] = self.compute_seconds.get(self.experiment, 0.0) + (seconds or 0.0)
        self.done += 1
        of = f"/{self.total}" if self.total else ""
        self.say(f"[{self.done}{of}] {self.experiment} {label}: {status} in {time.perf_counter() - start:.0f} s "
                 f"({time.perf_counter() - self.start:.0f} s so far)", flush=True)
        return result

    def pretraining(self, run: Pretraining) -> dict:
        spec = run.spec(self.budget)
        return self.cached(spec, lambda: measure(run, self.budget), f"{run.label} seed {run.seed}", run.measured)

    def pretrain_all(self, runs: list[Pretraining]) -> dict[str, dict[int, dict]]:
        """{label: {seed: measurements}} for a list of runs."""
        out: dict[str, dict[int, dict]] = {}
        for run in runs:
            out.setdefault(run.label, {})[run.seed] = self.pretraining(run)
        return out
