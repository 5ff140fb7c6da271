"""Where the project's files live, and how shipped files are checked: one repository-root rule, one sha256.

The root is the checkout that holds this package (so commands work from any working directory), unless the
environment variable ALBERT_MINI_ROOT names another folder with the same layout (data/, cache/, figures/), e.g.
for a non-editable install. It is read once, when this module is first imported.

Shipped data folders carry a manifest, `SHA256SUMS`, in the format `sha256sum` writes and `sha256sum -c` checks
(BSD-style `SHA256 (name) = hash` lines are read too, comments skipped); `verified_path` checks a file against it
every time the file is read, and only the command that owns an entry rewrites it (albert_mini.safe_files.
update_manifest, which keeps every other line).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from .settings import fast_mode

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["DATA_ROOT", "PRETRAINED_MODEL", "repo_root", "save_figure"]

ROOT_ENV = "ALBERT_MINI_ROOT"
MANIFEST = "SHA256SUMS"


def repo_root() -> Path:
    """The folder holding data/, cache/ and figures/: $ALBERT_MINI_ROOT, else the checkout of this package."""
    override = os.environ.get(ROOT_ENV, "").strip()
    return Path(override).expanduser().resolve() if override else Path(__file__).resolve().parents[1]


REPO_ROOT = repo_root()
DATA_ROOT = REPO_ROOT / "data"
CACHE_ROOT = REPO_ROOT / "cache"  # git-ignored: downloads, fast-mode outputs
CACHE_ENV = "ALBERT_MINI_CACHE"  # the token cache's folder (text.token_cache.cache_root), else CACHE_ROOT / "tokens"
FIGURES_ROOT = REPO_ROOT / "figures"
PRETRAINED_ROOT = DATA_ROOT / "pretrained"
PRETRAINED_MODEL = PRETRAINED_ROOT / "albert-mini-austen"  # the shipped classroom model; fine-tuning's default --init


def shipped_path(path: str | Path) -> str | None:
    """`path` relative to the repository root when it is shipped data (under data/), else None."""
    resolved = Path(path).resolve()
    return resolved.relative_to(REPO_ROOT).as_posix() if resolved.is_relative_to(DATA_ROOT) else None


def recorded_path(path: str | Path) -> str:
    """A file as a run record names it: relative to the repository root when it lies inside it (so the record
    holds no machine path and reads the same in every checkout), else `path` as given."""
    resolved = Path(path).resolve()
    return resolved.relative_to(REPO_ROOT).as_posix() if resolved.is_relative_to(REPO_ROOT) else str(path)


# --------------------------------------------------------------------------- figures
NBGRADER_ENV = "NBGRADER_EXECUTION"  # set by nbgrader's autograde and validate in the kernel's environment


def outside_the_book() -> bool:
    """True when a chapter runs somewhere other than the checkout's chapters/: under nbgrader, or in a Jupyter
    kernel whose working folder (the notebook's) is elsewhere (a hand-out, a submission, a grading copy)."""
    if os.environ.get(NBGRADER_ENV, "").strip():
        return True
    kernel = sys.modules.get("ipykernel.kernelapp")
    if kernel is None or not kernel.IPKernelApp.initialized():
        return False  # a command line (`albert-mini experiments`): it draws the book's own figures
    return Path.cwd().resolve() != (REPO_ROOT / "chapters").resolve()


def process_folder(prefix: str) -> Path:
    """A new private temporary folder, deleted when this process ends (a forked worker, which ends with os._exit,
    leaves it alone): for files nobody needs once the process is done."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def scratch_figures() -> Path:
    """A private temporary folder for the figures of a chapter run outside the book (one per process), deleted
    when the process ends: the notebook holds its figures, and a class graded every week would otherwise leave a
    folder in /tmp for every notebook run."""
    return process_folder("albert-mini-figures-")


def figure_path(name: str) -> Path:
    """Where figure `name` is saved: figures/ in full mode, a git-ignored cache folder in fast mode; and a temporary
    folder whenever the chapter runs outside the book (`outside_the_book`), so it writes nothing into the checkout."""
    if outside_the_book():
        folder = scratch_figures()
    elif fast_mode():
        folder = CACHE_ROOT / "figures-fast"
    else:
        folder = FIGURES_ROOT
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def save_figure(fig, name: str, folder: str | Path | None = None) -> Path:
    """Save a matplotlib figure as PNG (120 dpi, tight, no timestamp) to `folder` or figure_path; return its path."""
    path = figure_path(name) if folder is None else Path(folder) / name
    fig.savefig(path, dpi=120, bbox_inches="tight", metadata={"Software": None})
    return path


# --------------------------------------------------------------------------- sha256 and manifests
def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of bytes in memory (a download before it is written)."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks so large checkpoints never sit in memory whole."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


GNU_LINE = re.compile(r"^([0-9a-fA-F]{64}) ([ *])(.+)$")  # `HASH  NAME` (text) or `HASH *NAME` (binary)
BSD_LINE = re.compile(r"^SHA256 \((.+)\) = ([0-9a-fA-F]{64})$")  # what `sha256sum --tag` and BSD's sha256 write


def manifest_entry(line: str) -> tuple[str, str] | None:
    """(file name, sha256) of a manifest line in sha256sum's format or the BSD (--tag) one; None for a comment, a
    blank line or anything else (kept as it is, never read as an entry)."""
    line = line.rstrip("\r\n")
    gnu = GNU_LINE.match(line)
    if gnu:
        return gnu.group(3), gnu.group(1).lower()
    bsd = BSD_LINE.match(line)
    return (bsd.group(1), bsd.group(2).lower()) if bsd else None


def read_manifest(folder: str | Path, error: type[Exception] = ValueError,
                  rebuild: str | None = None) -> dict[str, str]:
    """File name -> sha256 from `folder/SHA256SUMS`; a missing manifest raises `error` naming the `rebuild` command."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        fix = f"; rebuild it with `{rebuild}`" if rebuild else ""
        raise error(f"checksum manifest {path} is missing{fix}")
    entries = {}
    for line in path.read_text().splitlines():
        entry = manifest_entry(line)
        if entry is not None:
            entries[entry[0]] = entry[1]
    return entries


def verified_path(folder: str | Path, name: str, rebuild: str, error: type[Exception] = ValueError) -> Path:
    """`folder/name` once it exists and matches its manifest sha256; else `error` saying how to restore it."""
    path = Path(folder) / name
    if not path.is_file():
        raise error(f"{path} is missing; rebuild it with `{rebuild}`")
    expected = read_manifest(folder, error, rebuild).get(name)
    if expected is None:
        raise error(f"{path} is not listed in {Path(folder) / MANIFEST}; rebuild it with `{rebuild}`")
    actual = sha256_file(path)
    if actual != expected:
        raise error(
            f"{path} is corrupt or was edited: sha256 {actual[:16]}... differs from the manifest's "
            f"{expected[:16]}...; restore it with `git checkout -- {path}` or rebuild it with `{rebuild}`"
        )
    return path
