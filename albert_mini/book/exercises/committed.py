"""A chapter's text as git holds it: what a hand-out is built from, never a teacher's unsaved answers.

JupyterLab autosaves a teacher's typed answers into the tracked chapter `.py`; a hand-out built from that file
would give the answer away. Inside a git checkout every source is read from the last commit (HEAD) and each
file that differs is named in one line; outside git (an unpacked archive) the files are read as they are.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ...errors import UserError


class UncommittedChapter(UserError):
    """A hand-out source that git does not hold."""


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess | None:
    if shutil.which("git") is None:
        return None
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=60)


def committed_bytes(path: Path) -> tuple[bytes, bool]:
    """(the file's bytes as committed, whether the working file differs); the file itself outside git."""
    found = _git(path.resolve().parent, "rev-parse", "--show-toplevel")
    if found is None or found.returncode != 0:
        return path.read_bytes(), False
    top = Path(found.stdout.decode().strip())
    relative = path.resolve().relative_to(top.resolve()).as_posix()
    shown = _git(top, "show", f"HEAD:{relative}")
    if shown.returncode != 0:
        raise UncommittedChapter(f"{path} is not committed to git, and a hand-out is built only from what git "
                                 f"holds (never from unsaved answers); commit it (git add {path}) or hand out "
                                 "a committed chapter")
    return shown.stdout, shown.stdout != path.read_bytes()


def differs_note(path: Path) -> str:
    return (f"note: {path} differs from what git holds (answers autosaved by JupyterLab?); the hand-out uses the "
            "committed version (commit the file to hand out your edit)")
