"""What the command line's flags offer and default to, in a module that imports neither torch nor numpy.

`albert-mini help COMMAND` builds COMMAND's parser from these names without loading torch (seconds); the modules
that use them (devices, text.instances, training.optim, training.pretraining_model, text.token_cache, book.grade)
import them from here, so each list is written once.
"""

from __future__ import annotations

import os

from .errors import UsageError

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")  # --device: albert_mini.devices.resolve_device's names
SENTENCE_TASK_NAMES = ("sop", "nsp", "none")  # --task: one task each in text.instances.SENTENCE_TASKS, this order
OPTIMIZERS = ("lamb", "adamw")  # --optimizer: training.optim.build_optimizer's
OUTPUT_BIASES = ("unigram", "zeros")  # --output-bias: training.pretraining_model's starts of the MLM output bias
POSITION_INITS = ("normal", "sinusoidal")  # training.pretraining_model's starts of the position table
DEFAULT_TIME_LIMIT = 600.0  # albert-mini grade --time-limit: seconds one notebook may run (book.grade)
DEFAULT_MEMORY_GB = 4.0  # albert-mini grade --memory-limit: GB one notebook may use (book.grade)


def check_device_name(name: str) -> str:
    """`name` when it is auto, cpu, cuda, cuda:N or mps (whether that device exists is `resolve_device`'s
    question); else UsageError listing the choices."""
    kind, colon, index = str(name).partition(":")
    if kind not in DEVICE_CHOICES or (colon and not (kind == "cuda" and index.isdigit())):
        raise UsageError(f"--device must be one of {', '.join(DEVICE_CHOICES)} (or cuda:N), got {name!r}")
    return str(name)


def default_workers() -> int:
    """All the cores this process may use (albert-mini prepare --workers; text.token_cache)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
