"""`albert-mini lab`: start JupyterLab on the book (what `make lab` runs, and what the browser tests start).

How the server is started (root, address, token, settings) is albert_mini.book.lab's.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from ..book import lab
from ..cli import port as port_type
from ..cli import run as run_cli
from ..errors import UsageError
from ..paths import repo_root
from ..safe_files import UnsafeWriteError, Writes
from . import command_parser

WRITES = Writes("lab", outputs="the environment's JupyterLab settings, share/jupyter/lab/settings/overrides.json "
                "(merged: every other setting kept), and the albert-mini kernel's spec, "
                "share/jupyter/kernels/albert-mini/", inputs="that file, and the chapters it opens")


def install_settings() -> Path:
    """The write rule for the environment's JupyterLab settings file (a regular file, merged), then the merge."""
    path = lab.settings_file(sys.prefix)
    WRITES.check(files=[("the JupyterLab settings file", path)], overwrite=True)  # merged into, never replaced
    return lab.install_settings(sys.prefix)


def install_kernel() -> Path:
    """The write rule for the `albert-mini` kernel's spec folder in this environment, then the install."""
    folder = lab.kernel_dir(sys.prefix)
    WRITES.check(files=[("the albert-mini kernel spec", folder / "kernel.json")], overwrite=True)  # ours alone
    return lab.install_kernel(sys.prefix, sys.executable)


def main(argv: list[str] | None = None) -> int:
    """Command line: start JupyterLab (see albert_mini.book.lab); bad flags end with one error line, status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = command_parser("lab", description=lab.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab; print the address")
    parser.add_argument("--port", type=port_type, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--install-settings", action="store_true",
                        help="only install the JupyterLab settings and the albert-mini kernel into this environment "
                        "(what `make venv` does)")
    args = parser.parse_args(argv)
    # Before anything is written or started: on a busy port JupyterLab would print a page of server log and stop.
    if not args.install_settings and args.port and lab.port_in_use(args.port):
        raise UsageError(f"--port {args.port}: {lab.LOOPBACK}:{args.port} is already in use by another program (a "
                         "JupyterLab started earlier?); choose another --port, or leave --port out for a free one")
    if args.install_settings:
        WRITES.check(files=[("the JupyterLab settings file", lab.settings_file(sys.prefix)),
                            ("the albert-mini kernel spec", lab.kernel_dir(sys.prefix) / "kernel.json")],
                     overwrite=True)  # both checked before either is written
        print(f"albert-mini: JupyterLab settings in {install_settings()}")
        print(f"albert-mini: the kernel {lab.KERNEL_NAME!r} ({lab.KERNEL_DISPLAY_NAME}) in {install_kernel()}")
        return 0
    root = repo_root()
    try:
        install_settings()
    except (OSError, UnsafeWriteError) as error:  # an environment we may not write to: JupyterLab still runs
        print(f"albert-mini: could not write {lab.settings_file(sys.prefix)} ({error}); double-click opens .py files "
              "in the editor (right-click, Open With, Notebook instead)", file=sys.stderr)
    try:
        install_kernel()
    except (OSError, UnsafeWriteError) as error:
        print(f"albert-mini: could not write {lab.kernel_dir(sys.prefix)} ({error}); JupyterLab will ask which kernel "
              f"to run the chapters with: pick {lab.KERNEL_DISPLAY_NAME} if listed, else Python 3", file=sys.stderr)
    port = args.port or lab.free_port()
    token = secrets.token_hex(24)
    print(f"albert-mini: JupyterLab at {lab.lab_url(port, token)}", flush=True)
    env = {**os.environ, "JUPYTER_TOKEN": token}
    command = lab.lab_command(root, port, open_browser=not args.no_browser)
    # exec: the process you started (and its PID) is the server itself, so stopping it stops JupyterLab.
    os.execve(sys.executable, command, env)
    return 1  # not reached
