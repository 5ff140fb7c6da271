"""What every command line shares: expected errors as one line on stderr with exit status 2; --debug for the rest.

    def main(argv=None):
        return cli.run(_main, argv)     # _main parses with cli.Parser and does the work

Expected errors are the subclasses of errors.UserError (ConfigError, CorpusError, CheckpointError, RecordError,
TokenizerError, UsageError, RunDirError, ...) and argparse's own complaints. Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, TypeVar

from .errors import UsageError, UserError

ERROR_STATUS = 2  # argparse's status for bad usage, used for every expected error
DEBUG_FLAG = "--debug"
Result = TypeVar("Result")


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
    """`command(argv)`; an expected error becomes `error: <message>` on stderr and SystemExit(2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return command(argv)
    except UserError as error:
        if DEBUG_FLAG in argv:
            raise
        print(f"error: {one_line(str(error))}", file=sys.stderr, flush=True)
        raise SystemExit(ERROR_STATUS) from None
