"""Where and with what each result was made: the device, the CPU, the git revision, and the result file itself."""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
from pathlib import Path

import torch

from ...paths import REPO_ROOT
from .budget import FAST, Budget

COMMAND = "python -m albert_mini.study.experiments"


def experiment_device() -> torch.device:
    """Where experiments train: ALBERT_MINI_DEVICE (cpu, cuda, cuda:1, ...), default the CPU. The device is
    recorded with every run, not keyed: a run made on a GPU stands for the same settings on the CPU."""
    return torch.device(os.environ.get("ALBERT_MINI_DEVICE", "cpu"))


def device_name(device: torch.device | None = None) -> str:
    """The device a run trains on, as recorded with it: the CPU's model name or the GPU's."""
    device = device or experiment_device()
    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)}"
    return f"CPU: {cpu_model()}"



def git_revision() -> str:
    """The checkout's short commit hash (with "+dirty" when files differ from it), or "unknown" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=REPO_ROOT).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True, cwd=REPO_ROOT).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@functools.cache
def cpu_model() -> str:
    """The CPU's model name as lscpu prints it (timings are labelled with it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write_result(name: str, payload: dict, budget: Budget, seeds, out_dir: Path, seconds: float,
                 command: str | None = None, compute_seconds: float | None = None,
                 run_devices: list[str] | None = None, budget_record: dict | None = None) -> Path:
    """<out_dir>/<name>.json: the numbers and everything needed to reproduce them. `wall_seconds` is this
    process's time; `compute_seconds` sums the time every run used took when it was computed, possibly in earlier
    runs (runs from the cache)."""
    meta = {"experiment": name, "command": command or f"{COMMAND} {name}", "fast_mode": budget == FAST,
            "budget": budget_record or budget.as_dict(), "seeds": list(seeds), "git_revision": git_revision(),
            "cpu": cpu_model(),
            "cores": os.cpu_count(), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "python": platform.python_version(), "wall_seconds": round(seconds, 1),
            "compute_seconds": None if compute_seconds is None else round(compute_seconds, 1),
            "run_devices": run_devices or []}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps({"meta": meta, **payload}, indent=1, default=float) + "\n")
    return path


