"""`make exercises`: student notebooks lose every solution, and run until the first exercise asks for one."""

from pathlib import Path

import pytest

from albert_mini.book.exercises.student import BEGIN, END, strip_solutions, student_notebook

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
WITH_EXERCISES = [p for p in sorted(CHAPTERS.glob("[0-9][0-9]_*.py")) if BEGIN in p.read_text()]
STUB = 'raise NotImplementedError("write your solution here")'


def test_strip_solutions_keeps_indentation_and_code_around():
    source = f"def f(x):\n    {BEGIN}\n    return x + 1\n    {END}\n\nprint(f)\n"
    assert strip_solutions(source) == f"def f(x):\n    {STUB}\n\nprint(f)\n"
    with pytest.raises(ValueError, match="markers"):
        strip_solutions(f"def f():\n    {BEGIN}\n    return 1\n")


def test_some_chapters_have_exercises():
    assert len(WITH_EXERCISES) >= 4


@pytest.mark.parametrize("chapter", WITH_EXERCISES, ids=lambda p: p.name)
def test_student_notebook_has_no_solution(chapter):
    notebook = student_notebook(chapter)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert BEGIN not in code and END not in code
    assert code.count(STUB) == chapter.read_text().count(BEGIN)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")


@pytest.mark.parametrize("chapter", WITH_EXERCISES, ids=lambda p: p.name)
def test_student_notebook_runs_until_the_first_exercise(chapter, monkeypatch):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    monkeypatch.setenv("ALBERT_MINI_FAST", "1")
    notebook = student_notebook(chapter)
    first_stub = next(i for i, cell in enumerate(notebook.cells) if STUB in cell.source)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(CHAPTERS)}})
    with pytest.raises(CellExecutionError) as error:
        client.execute()
    failed = next(i for i, cell in enumerate(notebook.cells)
                  if any(o.get("output_type") == "error" for o in cell.get("outputs", [])))
    assert failed >= first_stub, "a cell before the first exercise failed"
    assert error.value.ename in ("ExerciseFailed", "NotImplementedError"), error.value.ename
