"""Running the command lines in-process and in subprocesses, and checking their one-line errors."""

from __future__ import annotations

import functools
import json
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


# What a fresh interpreter sees of the package, asked once a test process (the three tests that read it each paid
# an interpreter and a torch import of their own): run from "/", as a program outside the checkout. In order: a
# plain `import albert_mini` (does it load torch, does it give a public name), `from albert_mini import *` (how
# many of __all__ it binds), then every module imported (which sets subpackage attributes) and the public names
# that are now modules (shadowed).
FRESH_IMPORT = """\
import importlib, inspect, json, pkgutil, sys
import albert_mini
facts = {"lamb": albert_mini.Lamb.__name__, "torch": "torch" in sys.modules}
star = {}
exec("from albert_mini import *", star)
facts["star"] = sum(name in star for name in albert_mini.__all__)
for m in pkgutil.walk_packages(albert_mini.__path__, "albert_mini."):
    if not m.name.endswith("__main__"):
        importlib.import_module(m.name)
facts["public"] = len(albert_mini.__all__)
facts["shadowed"] = [n for n in albert_mini.__all__ if inspect.ismodule(getattr(albert_mini, n))]
print(json.dumps(facts))
"""


@functools.cache
def fresh_import() -> dict:
    """FRESH_IMPORT's facts: lamb, torch, star, public, shadowed."""
    done = subprocess.run([sys.executable, "-c", FRESH_IMPORT], capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)
