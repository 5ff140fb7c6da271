"""The errors caused by what a user passed (a flag, a file, a directory), which command lines report in one line."""

from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


class UserError(Exception):
    """Bad input, not a bug: the message names the problem and the fix, so no traceback is needed to act on it."""


class UsageError(UserError, ValueError):
    """A flag value or a combination of flags that cannot work; the message names the flag and a value that does."""


class MissingFileError(UserError, FileNotFoundError):
    """A file or folder the user named that does not exist."""


class Diverged(UserError, FloatingPointError):
    """The loss (pretraining's or fine-tuning's) became NaN or infinite; the message names the step and the
    settings to change."""


class UnknownNameError(UsageError):
    """A name that is not in its registry (a preset, a sharing strategy, a task, a file format, an experiment)."""


def lookup(registry: Mapping[str, T], name: str, what: str) -> T:
    """`registry[name]`; UnknownNameError naming `what` and the known names when it holds no such name."""
    if name in registry:
        return registry[name]
    raise UnknownNameError(f"unknown {what} {name!r}; choose one of {', '.join(registry)}")
