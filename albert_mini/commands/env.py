"""`albert-mini env`: what a bug report needs, to paste as it is (as Hugging Face's `transformers env`).

    albert-mini env    # versions, the torch build, devices, threads, and the folders the package reads and writes

Versions come from the installed distributions' metadata, so a package that fails to import is still named;
torch is imported last, for its build and devices, and a torch that cannot be imported is reported, not raised.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path

from ..cli import run as run_cli
from ..errors import UserError
from ..safe_files import Writes
from . import command_parser

WRITES = Writes("env", outputs="nothing: it prints to stdout", inputs="nothing: the installed packages' metadata")
PACKAGES = ("numpy", "sentencepiece", "safetensors", "transformers")  # what the model, its text and weights run on
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # what torch's CPU thread pools read when they start
HEADER = "Paste these lines into your bug report:"


def main(argv: list[str] | None = None) -> None:
    """Command line: print the report; its only error is a bad flag."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    command_parser("env", description="Print the versions, devices, threads and folders a bug report needs, "
                   "ready to paste.").parse_args(argv)
    print(HEADER)
    print()
    for key, value in report():
        print(f"- {key}: {value}")


def installed(name: str) -> str:
    """The installed version of distribution `name`, or "not installed"."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def report() -> list[tuple[str, str]]:
    """The report's lines as (what, value), in the order they print."""
    from .. import __version__

    package = f"{__version__} ({Path(__file__).resolve().parents[1]})"
    recorded = installed("albert-mini")
    if recorded != __version__:  # an install older than the checkout: its metadata (and console script) are stale
        package += f"; the installed metadata says {recorded}: reinstall (make venv)"
    lines = [("albert-mini", package),
             ("Python", f"{platform.python_version()} ({sys.executable})"),
             ("platform", platform.platform())]
    lines += [(name, installed(name)) for name in PACKAGES]
    lines += _torch_lines()
    lines += _folder_lines()
    return lines


def _torch_lines() -> list[tuple[str, str]]:
    """torch's version and build, the devices it sees, and its threads; one line saying why when it cannot load."""
    version = installed("torch")
    try:
        import torch

        from ..devices import cpu_model, describe_device, mps_available, resolve_device
    except (ImportError, OSError) as error:  # OSError: a shared library of the wheel that cannot be loaded
        return [("torch", f"{version}; it cannot be imported: {type(error).__name__}: {error}")]
    if not hasattr(torch, "version") or not hasattr(torch, "Tensor"):  # an empty or partial package named torch
        where = getattr(torch, "__file__", None) or "a folder without __init__.py"
        return [("torch", f"{version}; the package imported as torch ({where}) is not torch (no torch.version); "
                          "reinstall it: make venv")]
    if torch.version.cuda:
        build = f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"
    elif getattr(torch.version, "hip", None):
        build = f"ROCm (HIP {torch.version.hip})"
    else:
        build = "CPU only"
    lines = [("torch", f"{torch.__version__} ({build})")]
    gpus = [f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
    lines.append(("CUDA available", f"yes: {', '.join(gpus)}" if torch.cuda.is_available() else "no"))
    lines.append(("MPS available", "yes" if mps_available() else "no"))
    lines.append(("--device auto", describe_device(resolve_device("auto"))))
    lines.append(("CPU", cpu_model()))
    backends = [name for name in ("gloo", "nccl", "mpi")
                if torch.distributed.is_available() and getattr(torch.distributed, f"is_{name}_available")()]
    lines.append(("torch.distributed", ", ".join(backends) or "not available"))
    lines.append(("threads", f"torch {torch.get_num_threads()} (inter-op {torch.get_num_interop_threads()}), "
                  f"{_cores()}"))
    lines += [(variable, os.environ.get(variable, "not set")) for variable in THREAD_VARIABLES]
    return lines


def _cores() -> str:
    """The cores this process may use, and the machine's when a container or affinity mask gives it fewer."""
    machine = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else machine
    return f"{usable} cores usable" + (f" of {machine}" if usable != machine else "")


def _folder_lines() -> list[tuple[str, str]]:
    """The checkout or $ALBERT_MINI_ROOT, the cache, the token cache and fast mode, each as the package names it."""
    from ..paths import CACHE_ROOT, REPO_ROOT, ROOT_ENV
    from ..settings import FAST_ENV, fast_mode
    from ..text.token_cache import CACHE_ENV, cache_root

    try:
        tokens = str(cache_root())
    except UserError as error:  # the report is what a user sends when the cache is broken: say why, go on
        tokens = f"unusable: {error}"
    if CACHE_ENV not in os.environ:
        tokens += f" (${CACHE_ENV} not set)"
    root = f"{REPO_ROOT}" + (f" (${ROOT_ENV})" if os.environ.get(ROOT_ENV, "").strip() else "")
    fast = f"${FAST_ENV}={os.environ[FAST_ENV]}" if FAST_ENV in os.environ else f"${FAST_ENV} not set"
    return [("root (data/, cache/, figures/)", root),
            ("cache", str(CACHE_ROOT)),
            ("token cache", tokens),
            ("fast mode", f"{'on' if fast_mode() else 'off'} ({fast})")]
