"""Where and with what each result was made: the command line, the device, the CPU, the git revision, and the
result file itself. Every result file under data/results/ records its `command` and `git_revision`
(tests/study/test_result_provenance.py)."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

import torch

from ...devices import cpu_model as cpu_model  # the one copy; the chapters import it from here
from ...devices import describe_device, resolve_device
from ...paths import REPO_ROOT
from .budget import FAST, Budget

COMMAND = "albert-mini experiments"

_device = "auto"  # the experiments command's --device; set with use_device


def use_device(name: str) -> torch.device:
    """Train the experiments' runs on `name` (the command's --device: auto, cpu, cuda, cuda:N, mps), the same rule
    as pretraining and fine-tuning (albert_mini.devices); a device that is not here is refused now."""
    global _device
    device = resolve_device(name)
    _device = str(name)
    return device


def device_choice() -> str:
    """The --device the experiments train on, as given (for worker processes, which resolve it themselves)."""
    return _device


def experiment_device() -> torch.device:
    """Where experiments train: the command's --device (default auto: a CUDA GPU, else Apple's GPU, else the CPU).
    The device is recorded with every run, never keyed: a run made on a GPU stands for the same settings on the
    CPU, so finished runs stay valid wherever the next ones are computed."""
    return resolve_device(_device)


def device_name(device: torch.device | None = None) -> str:
    """The device a run trains on, as recorded with it (albert_mini.devices.describe_device), e.g. "cpu: AMD EPYC
    7B13" or "cuda: NVIDIA H100 80GB HBM3"."""
    return describe_device(device or experiment_device())



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


def command_line(command: str, argv: Sequence[str]) -> str:
    """`albert-mini COMMAND ARGV...` as typed (quoted where a shell needs it): what a result file records as the
    command that made it, and that makes it again."""
    return shlex.join(["albert-mini", command, *map(str, argv)])


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


