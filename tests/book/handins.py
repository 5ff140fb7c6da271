"""Chapter notebooks as students hand them in, for the grading tests: the chapter's exercise cells (its demos left
out: not needed to grade, and they would slow a class down) with the stubs replaced by answers."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat

from albert_mini.book.exercises.solutions import defined_function, solution_cells, solutions_path


def worked_solutions(chapter: Path) -> dict[str, str]:
    """{exercise function: its cell} from the chapter's worked solutions."""
    return {defined_function(c.source): c.source for c in solution_cells(solutions_path(chapter))
            if c.cell_type == "code" and defined_function(c.source)}


def hand_in(chapter: Path, answers: dict[str, str], after: dict[str, str] | None = None, first: str = "",
            exercise_text: bool = False):
    """The exercise cells of `chapter`, stubs replaced by `answers` ({function: source}); `after` puts a cell of
    its own right after the cell of that grade id, `first` one before everything, and `exercise_text` keeps the
    "### Exercise" markdown cells too."""
    after = after or {}
    cells = [nbformat.v4.new_code_cell(first)] if first else []
    for cell in jupytext.read(chapter).cells:
        grading = cell.metadata.get("nbgrader", {})
        if not grading and not (exercise_text and cell.cell_type == "markdown" and "### Exercise" in cell.source):
            continue
        cell = nbformat.from_dict(dict(cell))
        if grading.get("solution") and grading["grade_id"] in answers:
            cell.source = answers[grading["grade_id"]]
        cells.append(cell)
        if grading.get("grade_id") in after:
            cells.append(nbformat.v4.new_code_cell(after[grading["grade_id"]]))
    return nbformat.v4.new_notebook(cells=cells)
