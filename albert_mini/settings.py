"""Run-time switches read from the environment, in one place below every layer (study and book code read them)."""

import os

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["fast_mode", "pick", "static_output"]

FAST_ENV = "ALBERT_MINI_FAST"
STATIC_ENV = "ALBERT_MINI_STATIC"  # set by `make book`: the committed notebooks and the HTML book hold no widgets


def fast_mode() -> bool:
    """True when chapters and experiments should use their small CI settings (ALBERT_MINI_FAST=1)."""
    return os.environ.get(FAST_ENV, "0").strip().lower() not in ("", "0", "false", "no")


def pick(fast, full):
    """`fast` under ALBERT_MINI_FAST=1, else `full`: how a chapter states both of its settings in one line."""
    return fast if fast_mode() else full


def static_output() -> bool:
    """True when a chapter is executed to be committed or published (ALBERT_MINI_STATIC=1): show tables, no widgets."""
    return os.environ.get(STATIC_ENV, "0").strip().lower() not in ("", "0", "false", "no")
