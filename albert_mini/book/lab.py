"""Start JupyterLab on the book: what `make lab` runs, and what the browser tests start.

    albert-mini lab                 # opens a browser tab on chapters/
    albert-mini lab --no-browser    # prints the address instead (with its token)

The server's root is the checkout (so a chapter's `../figures/x.png` resolves), it listens on 127.0.0.1 only, on a
free port, with a random token, and the tab lands in `chapters/`. Double-clicking a chapter `NN_topic.py` opens
it as a notebook: the default viewer for Python files is jupytext's notebook, a setting installed into this
environment (`{sys.prefix}/share/jupyter/lab/settings/overrides.json`), never into your home. Fast mode is
whatever the environment says: `ALBERT_MINI_FAST=1 make lab` runs every chapter with its small settings.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

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

