"""What every command line shares: expected errors as one line on stderr with exit status 2; --debug for the rest.

    def main(argv=None):
        return cli.run(_main, argv)     # _main parses with cli.Parser and does the work

Expected errors are the subclasses of errors.UserError (ConfigError, CorpusError, CheckpointError, RecordError,
TokenizerError, UsageError, RunDirError, ...), argparse's own complaints, and every OSError (a path that cannot be
read or written, a full disk), which is reported with the file and what to do. Ctrl-C is one line too, with exit
status 130 (128 + SIGINT, as shells report it), from the first line of the package on: while the command line
starts, and whenever it imports a module (a command imports torch, seconds, once its flags are read),
`hold_interrupts` and `release_interrupts` end the process the same way, at once.
Anything else is a bug and keeps its traceback. The argparse types below check numbers at the boundary, once:
`positive_float` and friends refuse NaN and infinity, which pass every `<= 0` test.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .errors import UsageError, UserError

ERROR_STATUS = 2  # argparse's status for bad usage, used for every expected error
INTERRUPTED_STATUS = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C
DEBUG_FLAG = "--debug"
SEED_MAX = 2**32 - 1  # NumPy's seeds stop here
PORT_MAX = 65535
Result = TypeVar("Result")
INTERRUPTED_LINE = ("error: interrupted (Ctrl-C); the same command starts again, and a training run resumes from its "
                    "last checkpoint")
COMMAND_NAMES = ("albert-mini", "albert-mini.exe")  # the console script, as sys.argv[0] names it


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose complaints become UsageErrors (so `run` prints them in one line), with --debug."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument(DEBUG_FLAG, action="store_true", help="on an error, show the full Python traceback")

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)")


def one_line(message: str) -> str:
    """A message's lines joined with '; ', so an error never spans several lines of the terminal."""
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def run(command: Callable[[list[str]], Result], argv: list[str] | None = None) -> Result:
    """`command(argv)`; an expected error becomes `error: <message>` on stderr and SystemExit(2), Ctrl-C the line
    `error: interrupted ...` and SystemExit(130). An error may carry its own `exit_status` (a preempted run's is
    128 + the signal, so a scheduler requeues it) and may leave its line to another process (an empty message)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        release_interrupts()  # inside the try: from here on Ctrl-C is a KeyboardInterrupt (outside imports)
        return command(argv)
    except KeyboardInterrupt:
        if DEBUG_FLAG in argv:
            raise
        print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
        raise SystemExit(INTERRUPTED_STATUS) from None
    except (ImportError, AttributeError) as error:
        broken = broken_dependency(error)
        if broken is None or DEBUG_FLAG in argv:
            raise
        print(f"error: {broken}", file=sys.stderr, flush=True)
        raise SystemExit(ERROR_STATUS) from None
    except (UserError, OSError) as error:
        if DEBUG_FLAG in argv:
            raise
        message = str(error) if isinstance(error, UserError) else os_error_message(error)
        if message:  # empty: another process of the run (torchrun's) says it
            print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
        raise SystemExit(getattr(error, "exit_status", ERROR_STATUS)) from None


# The installed packages a command imports once its flags are read: one that cannot be imported, or is not what
# its name says (an empty folder named torch), is a broken installation, said in one line, not a bug's traceback.
DEPENDENCIES = ("torch", "numpy", "sentencepiece", "safetensors", "tqdm", "matplotlib")


def broken_dependency(error: ImportError | AttributeError) -> str | None:
    """The one line for an import of a dependency that failed (`error` raised from it), else None."""
    if isinstance(error, ImportError):
        module = (error.name or _raised_in(error)).split(".")[0]
    else:  # module 'torch' has no attribute 'version': a package of that name, but not the real one
        obj = getattr(error, "obj", None)
        module = obj.__name__.split(".")[0] if type(obj).__name__ == "module" else ""
    if module not in DEPENDENCIES:
        return None
    where = sys.modules.get(module)
    found = f" (Python found it at {where.__file__})" if getattr(where, "__file__", None) else ""
    return (f"the installed package {module} cannot be used{found}: {type(error).__name__}: {one_line(error)}; "
            "reinstall the environment (make venv, or pip install -e . in a fresh virtual environment), then rerun "
            "`albert-mini env` to check it")


def _raised_in(error: BaseException) -> str:
    """The module of the innermost frame of `error` that belongs to a dependency (an ImportError a package raises
    itself, such as torch's when its shared library is missing, names no module), else ""."""
    found, frame = "", error.__traceback__
    while frame is not None:
        name = frame.tb_frame.f_globals.get("__name__", "")
        if name.split(".")[0] in DEPENDENCIES:
            found = name
        frame = frame.tb_next
    return found


def launched_as_command() -> bool:
    """Whether this process is the `albert-mini` command line (its console script, or `python -m albert_mini`,
    torchrun's workers included), not a program that imports the package (a notebook, a test run, a script)."""
    if sys.argv and sys.argv[0] == "-m":  # python -m PACKAGE, while the package is imported to find __main__
        argv = list(getattr(sys, "orig_argv", []))
        return any(a == "-m" and b == "albert_mini" for a, b in zip(argv, argv[1:])) or "-malbert_mini" in argv
    return bool(sys.argv) and Path(sys.argv[0]).name in COMMAND_NAMES


def _interrupted_while_starting(signum, frame):
    print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
    # At once, not by raising: the handler may run inside an extension's C code that swallows exceptions (torch's
    # start-up treats a failed `import numpy` as "no numpy" and goes on), and nothing is under way to clean up yet.
    os._exit(INTERRUPTED_STATUS)


def hold_interrupts() -> None:
    """In the command line only, and first thing (albert_mini/__init__ imports this module before torch): Ctrl-C
    ends the process with the one line and status 130 until `run` starts, where `release_interrupts` makes it a
    KeyboardInterrupt again outside imports (caught there, so a command cleans up). Nothing is under way to clean
    up before that. A program that imports the package keeps its own Ctrl-C (a notebook's stops a cell, not the
    kernel)."""
    held = launched_as_command() and DEBUG_FLAG not in sys.argv  # --debug: Python's traceback, as `run` gives it
    if held and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)


def _interrupted_unless_importing(signum, frame):
    # Inside an import the KeyboardInterrupt could be swallowed (see above) and the command go on: end at once.
    caller = frame
    while caller is not None:
        if caller.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            _interrupted_while_starting(signum, frame)
        caller = caller.f_back
    signal.default_int_handler(signum, frame)


def release_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt again, as Python's default does (after `hold_interrupts`; else nothing),
    except while a module is being imported: a command imports its modules (torch) once its flags are read, so
    that `--help` answers at once, and there Ctrl-C still ends the process with the one line and status 130."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, _interrupted_unless_importing)


_OS_FIXES = {
    errno.ENOSPC: "the disk is full; make room and rerun the same command",
    errno.EDQUOT: "the disk quota is used up; make room and rerun the same command",
    errno.EACCES: "permission denied; choose a path you may use, or change its permissions",
    errno.EPERM: "operation not permitted; choose a path you may use, or change its permissions",
    errno.EROFS: "the file system is read-only; choose a path on a writable disk",
    errno.ENOTDIR: "a part of the path is a file, not a folder; choose a path in a folder",
    errno.EISDIR: "it is a folder; give a file path",
    errno.ENOENT: "it does not exist; check the path",
    errno.EEXIST: "it already exists; choose a new path",
    errno.EFBIG: "the file grew past the largest size this process may write (`ulimit -f`, or the file system's "
                 "limit); raise the limit, or choose a disk that allows it, and rerun the same command",
}


def os_error_message(error: OSError) -> str:
    """An OSError as one line: the file (or files), what went wrong, and what to do."""
    files = " -> ".join(str(f) for f in (error.filename, error.filename2) if f is not None)
    fix = _OS_FIXES.get(error.errno, f"{error.strerror or error}; check the path, its permissions and the disk")
    return f"{files}: {fix}" if files else f"{error.strerror or error}: {fix}"


# --------------------------------------------------------------------------- argparse types
def _number(text: str, kind: type, what: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number; give {what}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (NaN and infinity are refused)."""
    value = _number(text, float, "a number > 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _number(text, float, "a number >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number >= 1")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def seed(text: str) -> int:
    """A seed NumPy, torch and Python all accept: 0 to 2**32 - 1."""
    value = _number(text, int, "a whole number")
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be in [0, {SEED_MAX}], got {text}")
    return value


def port(text: str) -> int:
    """A TCP port, or 0 for a free one."""
    value = _number(text, int, "a whole number")
    if not 0 <= value <= PORT_MAX:
        raise argparse.ArgumentTypeError(f"must be a TCP port in [1, {PORT_MAX}] (0: a free one), got {text}")
    return value


# albert_mini/__init__ imports this module before anything else (torch takes seconds to import): from here on,
# Ctrl-C while the command line starts is the one line. Outside the command line this does nothing.
hold_interrupts()
