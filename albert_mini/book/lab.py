"""Start JupyterLab on the book: what `make lab` runs, and what the browser tests start.

    albert-mini lab                 # opens a browser tab on chapters/
    albert-mini lab --no-browser    # prints the address instead (with its token)

The server's root is the checkout (so a chapter's `../figures/x.png` resolves), it listens on 127.0.0.1 only, on a
free port, with a random token, and the tab lands in `chapters/`. Each chapter shows one name there,
`NN_topic.ipynb`: its paired source `NN_topic.py` is left out of the file browser's listings (JupyterLab truncates
both names to the same text in a narrow sidebar), and jupytext opens the notebook with its inputs from the `.py` and
its outputs from the `.ipynb`, and saves both. A `.py` opened by path (File, Open from Path) opens as a notebook
too: the default viewer for Python files is jupytext's notebook, a setting installed into this environment
(`{sys.prefix}/share/jupyter/lab/settings/overrides.json`), never into your home. Fast mode is whatever the
environment says: `ALBERT_MINI_FAST=1 make lab` runs every chapter with its small settings.

Every chapter names the Jupyter kernel `albert-mini` ("Python (albert-mini)"): this environment's python, by its
absolute path, so a Jupyter installed elsewhere (nbgrader's, a system JupyterLab) still runs the chapters with
torch and albert_mini. `make venv` installs its spec into `{sys.prefix}/share/jupyter/kernels/albert-mini/`
(`albert-mini lab --install-settings`, as the settings), and `albert-mini lab` refreshes both when it starts.
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


KERNEL_NAME = "albert-mini"
KERNEL_DISPLAY_NAME = "Python (albert-mini)"


def kernel_dir(prefix: str | Path = sys.prefix) -> Path:
    """The `albert-mini` kernel's spec folder in the environment at `prefix` (Jupyter's data path there)."""
    return Path(prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME


def kernel_spec(python: str | Path = sys.executable) -> dict:
    """The kernel.json of the `albert-mini` kernel: ipykernel's own spec, run by `python` (an absolute path: the
    venv's bin/python, not the interpreter it links to, whose site-packages lack torch)."""
    from ipykernel.kernelspec import get_kernel_dict

    spec = get_kernel_dict()
    spec["argv"] = [str(python), *spec["argv"][1:]]
    spec["display_name"] = KERNEL_DISPLAY_NAME
    return spec


def install_kernel(prefix: str | Path = sys.prefix, python: str | Path = sys.executable) -> Path:
    """Write the `albert-mini` kernel's spec (and ipykernel's logos) under `prefix`; a file already as it should be is
    left untouched, so a second install writes nothing. Returns the spec folder."""
    from ipykernel.kernelspec import RESOURCES

    folder = kernel_dir(prefix)
    files = {"kernel.json": (json.dumps(kernel_spec(python), indent=1, sort_keys=True) + "\n").encode()}
    for logo in sorted(Path(RESOURCES).glob("logo-*")):
        files[logo.name] = logo.read_bytes()
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        path = folder / name
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
    return folder


def require_kernel() -> str:
    """KERNEL_NAME once Jupyter finds its spec from this environment; else a UserError naming the install."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    from ..errors import UserError

    try:
        KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        raise UserError(f"the Jupyter kernel {KERNEL_NAME!r} that the chapters name is not installed in {sys.prefix}; "
                        "install it with `make venv` (or `albert-mini lab --install-settings`)") from None
    return KERNEL_NAME


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on right now (the server is told not to try others, so a race fails loudly)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """Whether a server already holds `port` on `host`: asked by binding it as the server will (SO_REUSEADDR, so
    a port in TIME_WAIT after a server ended still counts as free, as it is for JupyterLab)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


# What the file browser leaves out: jupyter_server's own defaults, and the chapters' paired sources (`NN_topic.py`,
# in chapters/ and chapters/solutions/), which the chapter's `.ipynb` opens with. Names only: a glob cannot say
# "beside its notebook", and no package module starts with two digits.
HIDDEN = ("__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "[0-9][0-9]_*.py")


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
        f"--ContentsManager.hide_globs={list(HIDDEN)!r}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--ServerApp.allow_root=True")  # containers and CI run as root; it is still loopback + token
    return command


def lab_url(port: int, token: str) -> str:
    return f"http://{LOOPBACK}:{port}/lab/tree/{LANDING}?token={token}"

