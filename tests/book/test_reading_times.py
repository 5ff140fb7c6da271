"""The README's chapter table and the teacher guide give every chapter the same reading time."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_times() -> dict[str, int]:
    rows = [line.split("|") for line in (ROOT / "README.md").read_text().splitlines() if re.match(r"\| \d\d \|", line)]
    return {cells[1].strip(): int(cells[3].split()[0]) for cells in rows}


def guide_table_times() -> dict[str, int]:
    guide = (ROOT / "chapters" / "TEACHER_GUIDE.md").read_text()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| (\d\d) [^|]+\| (\d+) min \|", guide, re.M)}


def guide_section_times() -> list[int]:
    guide = (ROOT / "chapters" / "TEACHER_GUIDE.md").read_text()
    return [int(m) for m in re.findall(r"^\*\*Time\*\*: (\d+) min reading", guide, re.M)]


def test_readme_and_teacher_guide_agree_on_reading_times():
    readme = readme_times()
    assert len(readme) >= 12 and guide_table_times() == readme
    assert guide_section_times() == [readme[n] for n in sorted(readme)]  # each chapter's section, in order
