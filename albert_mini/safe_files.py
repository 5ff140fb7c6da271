"""One rule for every file a command writes: never over a file it did not create, all or nothing, checked first.

- `check_new_file` before the work starts: the destination is not a folder, not one of the command's inputs,
  not an existing file (the shipped data included) unless the user passed --overwrite, and its folder can be
  created and written. `check_out_folder` is the same check for a folder of outputs.
- `atomic_write_bytes` / `atomic_write_text`: a temp file beside the destination, fsynced, then renamed over
  it, so a crash or a full disk leaves the old file whole or the new one whole, never a truncated one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import UserError


class UnsafeWriteError(UserError, ValueError):
    """A destination a command may not write; the message names the flag, the path and the fix."""


def nearest_existing(path: Path) -> Path:
    """`path` itself or its closest ancestor that exists (what will hold the folders a write creates)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_folder_writable(folder: str | Path, flag: str, shown: str | Path | None = None) -> None:
    """Refuse when `folder` cannot be created or written: a file in its way, or no write permission."""
    shown = folder if shown is None else shown
    holder = nearest_existing(Path(folder))
    if not holder.is_dir():
        raise UnsafeWriteError(f"{flag} {shown}: {holder} is a file, not a folder, so nothing can be written "
                               "below it; choose a path in a folder")
    try:  # a real write, since os.access says yes to root even on a read-only or virtual file system
        with tempfile.TemporaryFile(dir=holder):
            pass
    except OSError as err:
        raise UnsafeWriteError(f"{flag} {shown}: nothing can be written in {holder} ({err.strerror or err}); choose "
                               "a folder you may write to, or change its permissions") from None


def check_new_file(path: str | Path, flag: str, overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> Path:
    """`path` once a command may write it; UnsafeWriteError naming the flag and the fix otherwise.

    An input of the command is refused even with `overwrite` (the command would destroy what it reads).
    """
    path = Path(path)
    if path.is_dir():
        raise UnsafeWriteError(f"{flag} {path} is a folder; give a file path, e.g. {path / 'out'}")
    resolved = path.resolve()
    for source in inputs:
        if Path(source).resolve() == resolved:
            raise UnsafeWriteError(f"{flag} {path} is one of this command's input files; writing there would "
                                   "destroy it, so choose another path")
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise UnsafeWriteError(f"{flag} {path} already exists and this command did not create it; choose a new "
                                   "path, or pass --overwrite to replace it")
        if not os.access(path, os.W_OK):
            raise UnsafeWriteError(f"{flag} {path} is read-only; choose another path or change its permissions")
    check_folder_writable(path.parent, flag, shown=path)
    return path


def check_out_folder(folder: str | Path, flag: str = "--out") -> Path:
    """`folder` once outputs may be written into it (it exists as a writable folder, or can be created)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UnsafeWriteError(f"{flag} {folder} is a file, not a folder; give a folder path (it is created if absent)")
    check_folder_writable(folder, flag)
    return folder


def temp_name(path: Path) -> Path:
    """The temp file beside `path` that a write goes through (albert_mini.training.rundir recognises the name)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


# Windows cannot open a folder (os.open raises PermissionError), so a folder is fsynced only elsewhere; there, the
# file system's own journal keeps a rename.
FSYNC_FOLDERS = os.name != "nt"


def fsync_folder(folder: str | Path) -> None:
    if not FSYNC_FOLDERS:
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to a temp file beside `path`, fsync it, rename it over `path`, fsync the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)  # a full disk or a Ctrl-C leaves the old file, and no half-written temp
        if isinstance(err, OSError) and err.filename is None:  # a failed write names no file: name the destination
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
        raise
    fsync_folder(path.parent)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """`atomic_write_bytes` of `text` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))
