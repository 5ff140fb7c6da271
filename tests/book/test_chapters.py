"""Every chapter source (.py, py:percent) and its committed notebook (.ipynb) tell the same story."""

import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
SOURCES = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))


def cells(notebook):
    return [(cell.cell_type, cell.source.strip()) for cell in notebook.cells]


def test_chapters_are_numbered_from_00_without_gaps_and_listed_in_the_readme():
    numbers = [source.name[:2] for source in SOURCES]
    assert numbers == [f"{n:02d}" for n in range(len(SOURCES))] and len(SOURCES) >= 10
    readme = (CHAPTERS.parent / "README.md").read_text()
    listed = [line.split("|")[1].strip() for line in readme.splitlines() if re.match(r"\| \d\d \|", line)]
    assert listed == numbers, "README's chapter table and chapters/ disagree"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_notebook_in_sync_with_source(source):
    paired = source.with_suffix(".ipynb")
    assert paired.exists(), f"{paired.name} is missing: run `make book`"
    expected, committed = cells(jupytext.read(source)), cells(jupytext.read(paired))
    assert committed == expected, f"{paired.name} is out of sync with {source.name}: run `make book`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_notebook_was_executed(source):
    notebook = jupytext.read(source.with_suffix(".ipynb"))
    code = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]
    assert code and all(cell.get("execution_count") for cell in code), f"{source.name}: run `make book`"
    errors = [o for cell in code for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{source.name} has error outputs"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_chapter_form(source):
    text = source.read_text()
    assert "formats: ipynb,py:percent" in text, "pair the chapter with its notebook in the jupytext header"
    if not source.name.startswith("00_"):
        assert "Learning goals" in text and "Summary" in text
    assert "sys.path" not in text, "chapters import the installed package, never patch sys.path"
