"""Start JupyterLab on the book: what `make lab` runs, and what the browser tests start.

    python -m albert_mini.book.lab                 # opens a browser tab on chapters/
    python -m albert_mini.book.lab --no-browser    # prints the address instead (with its token)

The server's root is the checkout (so a chapter's `../figures/x.png` resolves), it listens on 127.0.0.1 only, on a
free port, with a random token, and the tab lands in `chapters/`. Double-clicking a chapter `NN_topic.py` opens
it as a notebook: the default viewer for Python files is jupytext's notebook, a setting installed into this
environment (`{sys.prefix}/share/jupyter/lab/settings/overrides.json`), never into your home. Fast mode is
whatever the environment says: `ALBERT_MINI_FAST=1 make lab` runs every chapter with its small settings.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys
from pathlib import Path

from ..cli import Parser
from ..cli import port as port_type
from ..cli import run as run_cli
from ..paths import repo_root

LOOPBACK = "127.0.0.1"
LANDING = "chapters"  # the folder the file browser shows first
# JupyterLab defaults this book changes. A double-click on a .py file opens jupytext's notebook view instead of the
# text editor; and the book never needs the network, so JupyterLab does not ask to fetch news or check for updates.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


def settings_file(prefix: str | Path = sys.prefix) -> Path:
    """JupyterLab's overrides of its default settings in the environment at `prefix` (not the user's settings)."""
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def install_settings(prefix: str | Path = sys.prefix) -> Path:
    """Merge LAB_SETTINGS into the environment's overrides.json, keeping every other setting already there."""
    path = settings_file(prefix)
    current = json.loads(path.read_text()) if path.exists() else {}
    merged = dict(current)
    for plugin, values in LAB_SETTINGS.items():
        section = dict(merged.get(plugin, {}))
        for key, value in values.items():
            section[key] = {**section.get(key, {}), **value} if isinstance(value, dict) else value
        merged[plugin] = section
    if merged != current:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return path


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on right now (the server is told not to try others, so a race fails loudly)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def lab_command(root: Path, port: int, open_browser: bool) -> list[str]:
    """The `jupyter lab` command line (the token travels in the environment, never on the command line)."""
    command = [
        sys.executable, "-m", "jupyterlab",
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.ip={LOOPBACK}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.open_browser={open_browser}",
        f"--LabApp.default_url=/lab/tree/{LANDING}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--ServerApp.allow_root=True")  # containers and CI run as root; it is still loopback + token
    return command


def lab_url(port: int, token: str) -> str:
    return f"http://{LOOPBACK}:{port}/lab/tree/{LANDING}?token={token}"


def main(argv: list[str] | None = None) -> int:
    """Command line: start JupyterLab (see the module's docstring); bad flags end with one error line, status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = Parser(prog="python -m albert_mini.book.lab", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab; print the address")
    parser.add_argument("--port", type=port_type, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--install-settings", action="store_true",
                        help="only install the JupyterLab settings into this environment (what `make venv` does)")
    args = parser.parse_args(argv)
    if args.install_settings:
        print(f"albert-mini: JupyterLab settings in {install_settings()}")
        return 0
    root = repo_root()
    try:
        install_settings()
    except OSError as error:  # an environment we may not write to: JupyterLab still runs, with its own defaults
        print(f"albert-mini: could not write {settings_file()} ({error}); double-click opens .py files in the editor"
              " (right-click, Open With, Notebook instead)", file=sys.stderr)
    port = args.port or free_port()
    token = secrets.token_hex(24)
    print(f"albert-mini: JupyterLab at {lab_url(port, token)}", flush=True)
    env = {**os.environ, "JUPYTER_TOKEN": token}
    command = lab_command(root, port, open_browser=not args.no_browser)
    # exec: the process you started (and its PID) is the server itself, so stopping it stops JupyterLab.
    os.execve(sys.executable, command, env)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
