"""Where a run computes: one rule for pretraining, fine-tuning and the experiments.

    resolve_device("auto")     # a CUDA GPU if there is one, else Apple's GPU (MPS), else the CPU
    resolve_device("cpu")      # the CPU; "cuda", "cuda:1" or "mps": that device, or UsageError naming the fix
    describe_device(device)    # "cpu: AMD EPYC 7B13", "cuda: NVIDIA H100 80GB HBM3", "mps: Apple M2": for records

Under torchrun (`local_rank` given) each process takes GPU `local_rank` of its node; "auto" there never picks
MPS, since several processes cannot share Apple's GPU (and gloo, the backend off CUDA, reduces CPU tensors).
The command lines' `--device` flags (pretraining, fine-tuning, the experiments) are this function's `name`.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path

import torch

from .choices import DEVICE_CHOICES as DEVICE_CHOICES  # the --device names, kept where the command line reads them
from .choices import check_device_name
from .errors import UsageError

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["cpu_model"]


def mps_available() -> bool:
    """Whether Apple's GPU (Metal Performance Shaders) can run this torch's tensors."""
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(name: str | torch.device = "auto", local_rank: int | None = None) -> torch.device:
    """The device `name` stands for here: auto = CUDA if available, then MPS, then the CPU.

    `local_rank` is this process's rank on its node under torchrun (None: a single process): a CUDA run then
    uses GPU `local_rank`. A device that is not there raises UsageError, one line naming it and the fix.
    """
    name = check_device_name(str(name))
    kind, _, index = name.partition(":")
    if kind == "auto":
        if torch.cuda.is_available():
            kind = "cuda"
        elif local_rank is None and mps_available():
            return torch.device("mps")
        else:
            return torch.device("cpu")
    if kind == "cpu":
        return torch.device("cpu")
    if kind == "mps":
        if not mps_available():
            raise UsageError(f"--device mps: Apple's GPU (MPS) is not available here (it needs a Mac with Apple "
                             f"silicon and a torch built with MPS); use --device cpu, or --device auto to take "
                             f"{_best_here()}")
        if local_rank is not None:
            raise UsageError("--device mps runs one process: several processes (torchrun) cannot share Apple's GPU; "
                             "use --device cpu under torchrun, or run one process")
        return torch.device("mps")
    return _cuda_device(name, index, local_rank)


def _cuda_device(name: str, index: str, local_rank: int | None) -> torch.device:
    """The CUDA device --device `name` (GPU `index`, "" for the current one) stands for; UsageError if not here."""
    if not torch.cuda.is_available():
        built = "" if torch.version.cuda else f" (this torch, {torch.__version__}, is built without CUDA)"
        raise UsageError(f"--device {name}: no CUDA GPU is available here{built}; use --device cpu, or --device auto "
                         f"to take {_best_here()}")
    count = torch.cuda.device_count()
    if local_rank is not None:
        if index:
            raise UsageError(f"--device {name} names one GPU, but under torchrun each process takes GPU LOCAL_RANK; "
                             "use --device cuda (or auto)")
        if local_rank >= count:
            raise UsageError(f"torchrun started a process of local rank {local_rank}, but this node has {count} "
                             f"CUDA GPU(s), one per process; use --nproc_per_node {count}, or --device cpu")
        return torch.device("cuda", local_rank)
    if index and int(index) >= count:
        raise UsageError(f"--device {name}: this machine has {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}; "
                         "use one of them, --device cuda, or --device auto")
    return torch.device("cuda", int(index)) if index else torch.device("cuda")


def _best_here() -> str:
    """What auto picks on this machine, for messages."""
    return "Apple's GPU (MPS)" if mps_available() else "the CPU"


def describe_device(device: str | torch.device) -> str:
    """A device as run records name it: its type and the hardware, e.g. "cuda: NVIDIA H100 80GB HBM3"."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    if device.type == "mps":
        return f"mps: {apple_chip()}"
    if device.type == "cpu":
        return f"cpu: {cpu_model()}"
    return device.type


@functools.cache
def cpu_model() -> str:
    """The CPU's model name as lscpu prints it (timings and run records are labelled with it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if platform.system() == "Darwin":
        return apple_chip()
    return platform.processor() or platform.machine() or "unknown CPU"


@functools.cache
def apple_chip() -> str:
    """The Mac's chip, e.g. "Apple M2 Pro" (sysctl), or platform's name for it."""
    try:
        name = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                              timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        name = ""
    return name or platform.processor() or "Apple silicon"


def memory_capacity(device: str | torch.device) -> tuple[int, str] | None:
    """The most bytes a run on `device` could ever hold, and what that is, for messages; None when unknown.

    A CUDA GPU: its total memory. The CPU (and Apple's GPU, which shares it): physical RAM, or the container's
    limit when lower (cgroup v2's memory.max), plus swap. A total, not what is free now: a run estimated above it
    cannot fit however the machine is used, and one below it is never refused.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory, f"{describe_device(device)}'s memory"
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such name (macOS's PHYS_PAGES)
        return None
    what = "RAM"
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        limit = "max"
    if limit.isdigit() and int(limit) < ram:
        ram, what = int(limit), "the container's memory limit"
    swap = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("SwapTotal:"):
                swap = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return ram + swap, f"this machine's {what}" + (" and swap" if swap else "")
