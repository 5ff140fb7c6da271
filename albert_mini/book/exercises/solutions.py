"""The chapters' solutions, `chapters/solutions/NN_name.py`: where they are, and folded under their exercises.

A chapter shows each exercise unsolved (a stub and a check cell); its solutions file holds, per exercise, the
code cell that defines the function, the check run on it, and sometimes the package's own version. The HTML
book shows each solution's code collapsed under the exercise's check cell (`with_solutions`); a solutions cell
with an `after` metadata string (chapter 1's quiz answers) is folded under the first chapter cell containing it.
"""

from __future__ import annotations

import re
from pathlib import Path

FOLDER = "solutions"
SHOW, HIDE = "Show the solution", "Hide the solution"


def solutions_path(chapter: Path) -> Path:
    """chapters/NN_name.py or .ipynb -> chapters/solutions/NN_name.py."""
    chapter = Path(chapter)
    return chapter.parent / FOLDER / chapter.with_suffix(".py").name


def defined_function(source: str) -> str | None:
    """The name of the function a cell defines at its top level (None if it defines none)."""
    match = re.search(r"^def (\w+)\(", source, re.M)
    return match.group(1) if match else None


def solution_cells(path: Path, text: str | None = None) -> list:
    """The cells of a solutions file (jupytext percent format), or of `text` given as its contents."""
    import jupytext

    if text is not None:
        return jupytext.reads(text, fmt="py:percent").cells
    return jupytext.read(path, fmt="py:percent").cells


def _folded_markdown(source: str) -> str:
    """Markdown shown collapsed: an HTML <details> block, which needs no script and no network (its headings are
    left out: inside the block they would open a section of the page)."""
    text = "\n".join(line for line in source.strip().splitlines() if not line.startswith("#")).strip()
    return f'<details class="solution">\n<summary>{SHOW}</summary>\n\n{text}\n\n</details>'


def with_solutions(notebook, solutions: Path):
    """The notebook with each solution folded under its exercise's check cell (a copy; no outputs added)."""
    import copy

    import nbformat

    notebook = copy.deepcopy(notebook)
    if not Path(solutions).is_file():
        return notebook
    by_exercise, anchored = {}, []
    for cell in solution_cells(solutions):
        name = defined_function(cell.source) if cell.cell_type == "code" else None
        if name and name not in by_exercise:
            by_exercise[name] = cell.source
        if cell.metadata.get("after"):
            anchored.append(cell)
    cells = []
    for cell in notebook.cells:
        cells.append(cell)
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        name = grade_id[len("check_"):] if grade_id.startswith("check_") else ""
        if name in by_exercise:
            cells.append(nbformat.v4.new_code_cell(by_exercise[name], metadata={
                "tags": ["hide-input"], "mystnb": {"code_prompt_show": SHOW, "code_prompt_hide": HIDE}}))
        for extra in anchored:
            if extra.metadata["after"] in cell.source:
                cells.append(nbformat.v4.new_markdown_cell(_folded_markdown(extra.source)))
    notebook.cells = cells
    return notebook


def copy_with_solutions(notebook_path: Path, target: Path) -> Path:
    """Write the executed chapter notebook to `target` with its solutions folded in (what the HTML book shows)."""
    import nbformat

    notebook = nbformat.read(notebook_path, as_version=4)
    nbformat.write(with_solutions(notebook, solutions_path(notebook_path)), target)
    return target
