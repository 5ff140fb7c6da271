"""Running the command lines in-process and in subprocesses, and checking their one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def cli_error(main, argv: list[str], capsys) -> str:
    """The error line a CLI prints for `argv`, after checking it exits with status 2 and prints one line."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def run_command(*args: str, cwd: str | Path | None = None, env: dict | None = None,
                timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -W error::RuntimeWarning -m albert_mini args...` (`albert-mini args...`) in a fresh process (one
    thread)."""
    command = [sys.executable, "-W", "error::RuntimeWarning", "-m", "albert_mini", *map(str, args)]
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
