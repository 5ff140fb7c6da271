"""Every exercise arrives unsolved in its chapter (a stub and a check cell with nbgrader metadata), no later cell
uses the learner's answer, and every solution in chapters/solutions/ passes its check."""

import ast
import runpy
from pathlib import Path

import pytest

from albert_mini.book.exercises import NOT_ATTEMPTED, chapter_exercises, chapters_with_exercises
from albert_mini.book.exercises.solutions import solutions_path, with_solutions

jupytext = pytest.importorskip("jupytext")

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
NUMBERS = chapters_with_exercises()
STUB = 'raise NotImplementedError("write your solution here")'


def chapter_source(number: str) -> Path:
    return next(CHAPTERS.glob(f"{number}_*.py"))


def grader_metadata(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def test_every_chapter_with_exercises_has_its_solutions_file():
    assert len(NUMBERS) >= 9
    assert [solutions_path(chapter_source(n)).is_file() for n in NUMBERS] == [True] * len(NUMBERS)
    numbers_with_stubs = sorted(p.name[:2] for p in CHAPTERS.glob("[0-9][0-9]_*.py") if STUB in p.read_text())
    assert numbers_with_stubs == NUMBERS


# Chapter 6's file runs its 2,000-call masking check twice (seconds): test_exercises_ch06.py checks its solutions in
# the fast set, this one in make test.
SOLUTION_RUNS = [pytest.param(n, marks=pytest.mark.slow) if n == "06" else n for n in NUMBERS]


@pytest.mark.parametrize("number", SOLUTION_RUNS)
def test_every_solution_passes_its_check(number, monkeypatch, capsys):
    """Run the solutions file top to bottom (it asserts each check), then run every check on its solution."""
    monkeypatch.setenv("ALBERT_MINI_FAST", "1")
    namespace = runpy.run_path(str(solutions_path(chapter_source(number))))
    for name, exercise in chapter_exercises(number).items():
        check = exercise.check
        assert name in namespace, f"solutions/{chapter_source(number).name} has no solution of {name}"
        assert check(namespace[name]) is True, name
    assert NOT_ATTEMPTED not in capsys.readouterr().out


def stub_body_only(source: str, name: str) -> bool:
    """Whether the cell's function `name` holds nothing but its docstring and the stub's raise."""
    function = next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name == name)
    body = function.body[1:] if isinstance(function.body[0], ast.Expr) else function.body
    return len(body) == 1 and isinstance(body[0], ast.Raise) and "NotImplementedError" in ast.unparse(body[0])


@pytest.mark.parametrize("number", NUMBERS)
def test_the_chapter_shows_every_exercise_unsolved_with_nbgrader_cells(number):
    source = chapter_source(number)
    cells = jupytext.read(source).cells
    # nbgrader's markers wrap each stub's raise alone: generate_assignment then keeps the signature and docstring
    text = source.read_text()
    assert text.count(f"### BEGIN SOLUTION\n    {STUB}\n    ### END SOLUTION") == text.count("BEGIN SOLUTION") > 0
    assert not [c for c in cells if "solution" in c.metadata.get("tags", [])], "a cell tagged `solution` is left"
    for name in chapter_exercises(number):
        stubs = [i for i, c in enumerate(cells) if grader_metadata(c).get("grade_id") == name]
        checks = [i for i, c in enumerate(cells) if grader_metadata(c).get("grade_id") == f"check_{name}"]
        assert len(stubs) == 1 and len(checks) == 1, f"{name}: one stub cell and one check cell"
        stub, check = cells[stubs[0]], cells[checks[0]]
        assert grader_metadata(stub)["solution"] is True and grader_metadata(stub)["grade"] is False
        assert STUB in stub.source and stub_body_only(stub.source, name), f"{name}: the stub holds an answer"
        assert f"    ### BEGIN SOLUTION\n    {STUB}\n    ### END SOLUTION" in stub.source, f"{name}: markers"
        assert grader_metadata(check)["grade"] is True and grader_metadata(check)["points"] > 0
        assert grader_metadata(check)["locked"] is True and f"check_{name}({name})" in check.source
        assert checks[0] > stubs[0]
    ids = [grader_metadata(c)["grade_id"] for c in cells if grader_metadata(c)]
    assert len(ids) == len(set(ids)), "nbgrader needs grade ids unique within a notebook"


def names_used(source: str) -> set[str]:
    """Names a cell reads or binds (an `import x as y` binds y, not x); IPython magics are skipped."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    used = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            used.add(node.name)
        elif isinstance(node, ast.alias):
            used.add(node.asname or node.name.split(".")[0])
    return used


@pytest.mark.parametrize("number", NUMBERS)
def test_no_later_cell_uses_or_replaces_the_learners_function(number):
    """After an exercise, the chapter runs on the package's code: its cells never call the learner's function
    (a stub would stop them) nor rebind its name (the grader checks the learner's own)."""
    cells = jupytext.read(chapter_source(number)).cells
    found = []
    for name in chapter_exercises(number):
        stub = next(i for i, c in enumerate(cells) if grader_metadata(c).get("grade_id") == name)
        for index, cell in enumerate(cells[stub + 1:], start=stub + 1):
            if cell.cell_type == "code" and grader_metadata(cell).get("grade_id") != f"check_{name}":
                if name in names_used(cell.source):
                    found.append(f"cell {index} uses `{name}`")
    assert not found, f"{chapter_source(number).name}: " + "; ".join(found)


def test_names_used_sees_calls_and_bindings_but_not_an_aliased_import():
    assert "f" in names_used("x = f(1)") and "f" in names_used("def f():\n    pass")
    assert "f" in names_used("from m import f") and "f" not in names_used("from m import f as g")


@pytest.mark.parametrize("number", NUMBERS)
def test_a_stub_runs_and_its_check_says_not_attempted_yet(number, capsys):
    """The stub cell as a learner first runs it, then its check: one deterministic line, no exception."""
    cells = jupytext.read(chapter_source(number)).cells
    for name, exercise in chapter_exercises(number).items():
        check = exercise.check
        namespace = {}
        stub = next(c.source for c in cells if grader_metadata(c).get("grade_id") == name)
        exec("from __future__ import annotations\n" + stub, namespace)  # its annotations name earlier imports
        assert check(namespace[name]) is False
        first, second = capsys.readouterr().out, None
        check(namespace[name])
        second = capsys.readouterr().out
        assert first == second and first.startswith(f"{name}") and f": {NOT_ATTEMPTED};" in first


@pytest.mark.parametrize("number", NUMBERS)
def test_the_html_book_folds_each_solution_under_its_exercise(number):
    import nbformat

    notebook = nbformat.read(chapter_source(number).with_suffix(".ipynb"), as_version=4)
    folded = with_solutions(notebook, solutions_path(chapter_source(number)))
    assert len(folded.cells) >= len(notebook.cells) + len(chapter_exercises(number))
    for name in chapter_exercises(number):
        check = next(i for i, c in enumerate(folded.cells) if grader_metadata(c).get("grade_id") == f"check_{name}")
        solution = folded.cells[check + 1]
        assert solution.cell_type == "code" and f"def {name}(" in solution.source and STUB not in solution.source
        assert "hide-input" in solution.metadata["tags"]
        assert solution.metadata["mystnb"]["code_prompt_show"] == "Show the solution"
    assert not any(STUB in c.source for c in folded.cells if c.metadata.get("tags") == ["hide-input"])


def test_under_nbgrader_a_stub_fails_its_grade_cell(monkeypatch):
    """nbgrader's autograder gives a grade cell its points when it raises nothing: there a stub must raise."""
    from albert_mini.book.exercises import ExerciseFailed, check_sop_pair

    def stub(*args):
        raise NotImplementedError("write your solution here")

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(ExerciseFailed, match=NOT_ATTEMPTED):
        check_sop_pair(stub)


def test_the_html_book_folds_chapter_1s_quiz_answers_under_the_questions():
    import nbformat

    chapter = chapter_source("01")
    notebook = nbformat.read(chapter.with_suffix(".ipynb"), as_version=4)
    folded = with_solutions(notebook, solutions_path(chapter))
    where = next(i for i, c in enumerate(folded.cells) if "Try the three questions before reading on" in c.source)
    answers = folded.cells[where + 1]
    assert answers.cell_type == "markdown" and answers.source.startswith('<details class="solution">')
    assert "**1 B, 2 C, 3 D**" in answers.source and "\n#" not in answers.source
