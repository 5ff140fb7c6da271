"""Running an experiment's models: a cache of finished runs (so an interrupted run resumes), progress lines, and
the time estimate printed before anything starts.

Cache key: the sha256 of a run's settings (its spec: model config, sentence task or fine-tuning task, seed, budget),
the numerics version of its kind (NUMERICS_VERSION below) and the data manifests. The device a run is computed on is
not part of it (a spec's "device" entries are left out: finished runs stay valid on any device, and each record
names the device that computed it). The source code is deliberately not part of the key either: a comment, a
rename or a refactor keeps hours of finished runs valid. What guards against a change that does alter the numbers
is tests/study/test_numerics_guard.py: a short seeded run of every kind whose values must not move unless that
kind's version is bumped here (which retires its cached runs).
"""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from ...paths import CACHE_ROOT, DATA_ROOT
from ...safe_files import atomic_write_text
from ...settings import fast_mode
from .budget import Budget
from .measure import Pretraining, measure
from .provenance import device_choice, device_name, use_device

# Bump a kind's number whenever a change alters what its runs compute (losses, data order, masks, initialisation,
# measurements); its finished runs are then recomputed, every other kind's stay valid.
# trunk 2, branch 2: Table 5 redesigned (the trunk is the classroom recipe with SOP, stopped before SOP leaves chance;
# branches continue its optimizer and schedule); the MLM-only trunk's runs are retired, not silently reused.
NUMERICS_VERSION = {"pretraining": 1, "finetuning": 1, "trunk": 2, "branch": 2, "scratch": 1,
                    "supervised": 1, "language": 1}
WORKERS_ENV = "ALBERT_MINI_WORKERS"  # runs computed at once in worker processes (default 1: in this process)


def workers() -> int:
    """How many runs an experiment may compute at once (ALBERT_MINI_WORKERS, default 1)."""
    value = os.environ.get(WORKERS_ENV, "1")
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{WORKERS_ENV} must be a whole number >= 1, got {value!r}")
    return int(value)


def _worker_start(threads: int, device: str = "auto") -> None:
    import torch

    torch.set_num_threads(threads)
    use_device(device)  # a spawned worker starts with the module's default: give it the command's --device


def _timed(compute: Callable[[], dict]) -> tuple[dict, float]:
    start = time.perf_counter()
    return compute(), time.perf_counter() - start

def cache_dir() -> Path:
    """Where finished runs are kept: full runs in data/results/experiment-runs/ (committed, so a run that takes
    interrupted continues later or on another machine), fast runs in the git-ignored cache/."""
    return CACHE_ROOT / "experiment-runs-fast" if fast_mode() else DATA_ROOT / "results" / "experiment-runs"


@functools.cache
def data_fingerprint() -> str:
    """sha256 over the data manifests (data/*/SHA256SUMS): another corpus or tokenizer never reuses a run."""
    digest = hashlib.sha256()
    for manifest in sorted(DATA_ROOT.glob("*/SHA256SUMS")):
        digest.update(manifest.parent.name.encode() + b"\0" + manifest.read_bytes())
    return digest.hexdigest()


def numerics_version(spec: dict) -> int:
    """The version of the code that computes runs of the spec's kind."""
    kind = spec.get("kind")
    if kind not in NUMERICS_VERSION:
        raise ValueError(f"run spec of unknown kind {kind!r}; add it to NUMERICS_VERSION in {__name__}")
    return NUMERICS_VERSION[kind]


def without_device(spec):
    """`spec` with every "device" entry left out, at any depth (fine-tuning settings name one): where a run is
    computed is recorded with it, never part of its key."""
    if isinstance(spec, dict):
        return {k: without_device(v) for k, v in spec.items() if k != "device"}
    if isinstance(spec, (list, tuple)):
        return [without_device(v) for v in spec]
    return spec


def run_key(spec: dict) -> str:
    """The cache key of a run: its settings (not its device), its kind's numerics version and the data (24 hex
    digits)."""
    text = json.dumps({"spec": without_device(spec), "version": numerics_version(spec), "data": data_fingerprint()},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


LEGACY_DEVICES = {"CPU: ": "cpu: ", "GPU: ": "cuda: "}  # how records named devices before albert_mini.devices


def recorded_device(record: dict | None) -> str:
    """The device a cached run's record names, in describe_device's words ("CPU: x" of older records: "cpu: x")."""
    device = (record or {}).get("device") or "not recorded"
    for old, new in LEGACY_DEVICES.items():
        if device.startswith(old):
            return new + device[len(old):]
    return device


class RunCache:
    """Finished runs as <folder>/<key>.json, written atomically the moment each run ends."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def key(self, spec: dict) -> str:
        return run_key(spec)

    def load(self, spec: dict) -> dict | None:
        record = self.load_record(spec)
        return record["result"] if record else None

    def load_record(self, spec: dict) -> dict | None:
        """The stored {"spec", "result", "seconds"} of `spec`, or None."""
        path = self.folder / f"{self.key(spec)}.json"
        if not path.exists():
            return None
        stored = json.loads(path.read_text())
        same = without_device(stored.get("spec")) == json.loads(json.dumps(without_device(spec), default=str))
        return stored if same and stored.get("version", 1) == numerics_version(spec) else None

    def save(self, spec: dict, result: dict, seconds: float | None = None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{self.key(spec)}.json"
        record = {"spec": without_device(spec), "version": numerics_version(spec), "result": result,
                  "seconds": seconds, "device": device_name()}
        atomic_write_text(path, json.dumps(record, default=float))  # a killed run leaves no half file under the key


class Runner:
    """What an experiment's run() gets: the budget, the seeds, the cache of finished runs and a progress line."""

    def __init__(self, budget: Budget, seeds=(0,), cache: RunCache | None = None, say: Callable = print,
                 total: int | None = None):
        if not seeds:
            raise ValueError("give at least one seed, e.g. --seeds 0 1 2")
        self.budget, self.seeds, self.cache, self.say = budget, tuple(seeds), cache, say
        self.total, self.done, self.ran, self.start = total, 0, 0, time.perf_counter()
        self.experiment = ""
        # Seconds each run used took when it was computed, in whichever run of the command: the cost in all.
        self.compute_seconds: dict[str, float] = {}
        # Where each experiment's runs were computed (a CPU or a GPU, as recorded with each run).
        self.devices: dict[str, set[str]] = {}

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
        device = recorded_device(record) if record and status == "cached" else device_name()
        self.devices.setdefault(self.experiment, set()).add(device)
        self.done += 1
        of = f"/{self.total}" if self.total else ""
        self.say(f"[{self.done}{of}] {self.experiment} {label}: {status} in {time.perf_counter() - start:.0f} s "
                 f"({time.perf_counter() - self.start:.0f} s so far)", flush=True)
        return result

    def cached_all(self, jobs: list[tuple[dict, Callable[[], dict], str]]) -> list[dict]:
        """`cached` for each (spec, compute, label); with ALBERT_MINI_WORKERS > 1 the pending runs are computed in
        that many worker processes at once (`compute` must pickle: a module-level function or a partial of one).
        Each result is saved the moment its run ends, by this process alone."""
        pending = [(spec, compute, label) for spec, compute, label in jobs
                   if self.cache is None or self.cache.load(spec) is None]
        count = min(workers(), len(pending))
        if count > 1 and self.cache is not None:
            threads = max(1, (os.cpu_count() or 1) // count)
            with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"),
                                     initializer=_worker_start, initargs=(threads, device_choice())) as pool:
                running = {pool.submit(_timed, compute): (spec, label) for spec, compute, label in pending}
                for future in as_completed(running):
                    spec, label = running[future]
                    result, seconds = future.result()
                    self.cache.save(spec, result, seconds)
                    self.ran += 1
                    self.say(f"{self.experiment} {label}: ran in {seconds:.0f} s in a worker", flush=True)
        return [self.cached(spec, compute, label) for spec, compute, label in jobs]

    def pretraining(self, run: Pretraining) -> dict:
        spec = run.spec(self.budget)
        return self.cached(spec, lambda: measure(run, self.budget), f"{run.label} seed {run.seed}", run.measured)

    def pretrain_all(self, runs: list[Pretraining]) -> dict[str, dict[int, dict]]:
        """{label: {seed: measurements}} for a list of runs."""
        out: dict[str, dict[int, dict]] = {}
        for run in runs:
            out.setdefault(run.label, {})[run.seed] = self.pretraining(run)
        return out
