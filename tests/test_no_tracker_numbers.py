"""The repository names behaviours, not tracker numbers: no "issue 41" or "#43" in code, tests, chapters or docs.

A citation of another project's tracker stays: it names the repository (`albert#234`, `google-research#79`).
Result records (data/) keep the provenance notes they were written with."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# "issue 41", "Issues 27", "issue #43", "Issue 43's", "issue N"; or a number sign and digits that no repository name
# (letters, digits, "-", "_", "." or "/") comes right before.
TRACKER = re.compile(r"\bissues? +(#?\d+|N\b)|(?<![\w./-])#\d+\b", re.IGNORECASE)


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    paths = [ROOT / name for name in listed.decode().split("\0") if name and not name.startswith("data/")]
    # This file is left out: its examples of what the pattern finds are tracker numbers on purpose.
    return [p for p in paths if p.is_file() and p != Path(__file__).resolve() and b"\0" not in p.read_bytes()[:8192]]


@pytest.mark.parametrize("text, found", [
    ("see issue 41", True), ("Issue 43's goal", True), ("issues #12 and 13", True), ("the issue N rule", True),
    ("(#43)", True), ("albert#234 and google-research#79", False), ("an issue with 3 parts", False),
    ("color #fff", False), ("the issues", False),
])
def test_the_pattern_finds_tracker_numbers_and_spares_citations(text, found):
    assert bool(TRACKER.search(text)) == found


def test_no_tracked_text_file_names_a_tracker_number():
    hits = [f"{path.relative_to(ROOT)}:{n}: {match.group(0)}"
            for path in tracked_text_files()
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
            for match in [TRACKER.search(line)] if match]
    assert hits == [], "name the behaviour instead of the tracker number:\n" + "\n".join(hits)
