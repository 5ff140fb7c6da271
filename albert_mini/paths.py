"""Where the shipped data lives: one repository-root rule for every default path.

The root is the checkout that holds this package (so commands work from any working directory), unless the
environment variable ALBERT_MINI_ROOT names another folder with the same layout (data/, cache/, figures/),
e.g. for a non-editable install. It is read once, when the package is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "ALBERT_MINI_ROOT"


def repo_root() -> Path:
    """The folder holding data/, cache/ and figures/: $ALBERT_MINI_ROOT, else the checkout of this package."""
    override = os.environ.get(ROOT_ENV, "").strip()
    return Path(override).expanduser().resolve() if override else Path(__file__).resolve().parents[1]


REPO_ROOT = repo_root()
DATA_ROOT = REPO_ROOT / "data"
CACHE_ROOT = REPO_ROOT / "cache"
PRETRAINED_ROOT = DATA_ROOT / "pretrained"
PRETRAINED_MODEL = PRETRAINED_ROOT / "albert-mini-austen"  # what fine-tuning starts from by default


def shipped_path(path: str | Path) -> str | None:
    """`path` relative to the repository root when it is shipped data (under data/), else None."""
    resolved = Path(path).resolve()
    return resolved.relative_to(REPO_ROOT).as_posix() if resolved.is_relative_to(DATA_ROOT) else None
