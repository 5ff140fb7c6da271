"""`make exercises`: student notebooks lose every solution and every cell that reveals one, show no reference
answer anywhere (its code, or the numbers an exercise asks for before it asks), and run until the first exercise."""

import ast
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest

from albert_mini.book.exercises.student import BEGIN, END, reveals_answer, strip_solutions, student_notebook

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
WITH_EXERCISES = [p for p in sorted(CHAPTERS.glob("[0-9][0-9]_*.py")) if BEGIN in p.read_text()]
STUB = 'raise NotImplementedError("write your solution here")'
MIN_FRAGMENT = 12  # shorter pieces of code (`return out`, `if swap:`) are not an answer


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


@pytest.mark.slow
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


# ------------------------------------------------------------------------------------------- no answer shown
def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def answer_fragments(code: str) -> set[str]:
    """Distinctive pieces of answer code, without whitespace: every statement (the first line of a compound one)
    and every computed expression it returns or assigns, both as Python prints them back (ast.unparse) and as
    written; for a whole function, only its body after the docstring (the signature is the exercise's own)."""
    code = textwrap.dedent(code)
    tree = ast.parse(code)
    lines = code.splitlines()
    if len(tree.body) == 1 and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        body = tree.body[0].body
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring says what, not how
        lines = lines[body[0].lineno - 1:body[-1].end_lineno]
        tree = ast.Module(body=body, type_ignores=[])
    trivial = (type(None), ast.Name, ast.Tuple, ast.Constant, ast.Attribute)  # `return a, b`: no answer in it
    pieces = [re.sub(r"^\s*return\s", "", line.split("#", 1)[0]) for line in lines
              if not line.lstrip().startswith("def ")]
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            value = getattr(node, "value", None)
            if not (isinstance(node, ast.Return) and isinstance(value, trivial)):
                pieces.append(ast.unparse(node).splitlines()[0])
            if isinstance(node, (ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign)) and not isinstance(
                    value, trivial):
                pieces.append(ast.unparse(value))
    return {squeeze(p) for p in pieces if len(squeeze(p)) >= MIN_FRAGMENT and re.search(r"[-+*/%<>=(\[]", p)}


def computed_expressions(code: str) -> set[str]:
    """The arithmetic a solution returns or assigns, without whitespace, however short (`V*E+E*H+H`): shown in
    code before its exercise, it computes the answer there."""
    found = set()
    for node in ast.walk(ast.parse(textwrap.dedent(code))):
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Return, ast.Assign, ast.AugAssign)) and isinstance(value, ast.BinOp):
            text = squeeze(ast.unparse(value))
            if sum(text.count(op) for op in "+-*/%") >= 2:
                found.add(text)
    return found


def solution_blocks(chapter: Path) -> dict[str, str]:
    """Exercise name -> the code between the solution markers in the chapter source."""
    blocks = {}
    for cell in student_source_cells(chapter):
        match = re.search(r"def (\w+)\(.*?" + re.escape(BEGIN) + r"[^\n]*\n(.*?)^[ \t]*" + re.escape(END),
                          cell.source, re.S | re.M)
        if match:
            blocks[match.group(1)] = match.group(2)
    return blocks


def student_source_cells(chapter: Path):
    import jupytext

    return jupytext.read(chapter).cells


def exercise_module(chapter: Path):
    return importlib.import_module(f"albert_mini.book.exercises.ch{chapter.name[:2]}")


def number_pattern(n: int | float) -> re.Pattern:
    """A whole number as printed with or without thousands commas; a fraction to 3 or 4 decimals."""
    if isinstance(n, float):
        spellings = sorted({f"{n:.4f}", f"{n:.3f}"}, key=len, reverse=True)
    else:
        spellings = sorted({f"{n:,}", str(n)}, key=len, reverse=True)
    return re.compile(r"(?<![\d.,])(?:" + "|".join(map(re.escape, spellings)) + r")(?![\d]|[.,]\d)")


def output_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        text = output.get("text", "") or "".join(str(v) for k, v in output.get("data", {}).items()
                                                  if k.startswith("text/"))
        parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def readable_cells(chapter: Path) -> list[tuple[str, str, str]]:
    """(cell type, source, committed output) of every cell the student notebook keeps, in order: what a student
    reads, and what a cell prints when it is run (the outputs of the executed chapter)."""
    import jupytext

    source_cells = jupytext.read(chapter).cells
    executed = jupytext.read(chapter.with_suffix(".ipynb")).cells
    assert len(executed) == len(source_cells), f"{chapter.name}: run `make book`"
    kept = []
    for cell, run in zip(source_cells, executed):
        if not reveals_answer(cell):
            kept.append((cell.cell_type, strip_solutions(cell.source) if cell.cell_type == "code" else cell.source,
                         output_text(run)))
    return kept


def canonical(cell_type: str, source: str) -> str:
    if cell_type == "code":
        try:
            return squeeze(source) + "\n" + squeeze(ast.unparse(ast.parse(source)))
        except SyntaxError:
            return squeeze(source)
    return squeeze(source.replace("`", ""))


def test_answer_fragments_ignore_generic_lines():
    fragments = answer_fragments("def f(a, b):\n    \"\"\"Doc.\"\"\"\n    out = list(a)\n    if b:\n"
                                 "        return V * E + E * H + H\n    return out\n")
    assert "V*E+E*H+H" not in fragments  # too short to tell apart from ordinary code
    assert "returnV*E+E*H+H" in fragments and "out=list(a)" not in fragments and "returnout" not in fragments


def test_every_exercise_declares_its_answers():
    for chapter in WITH_EXERCISES:
        module = exercise_module(chapter)
        checks = {name[len("check_"):] for name in dir(module)
                  if name.startswith("check_") and name != "check_against_reference"}
        assert checks == set(module.ANSWERS), f"{module.__name__}: ANSWERS must name every exercise"
        assert checks == set(solution_blocks(chapter)), f"{chapter.name}: one solution block per exercise"


@pytest.mark.parametrize("chapter", WITH_EXERCISES, ids=lambda p: p.name)
def test_student_notebook_shows_no_reference_answer(chapter):
    """No reference answer's code anywhere in the student notebook, in a cell's text or in what a kept cell prints
    (e.g. `inspect.getsource` of the package's version); no number an exercise asks for before it asks."""
    module = exercise_module(chapter)
    cells = readable_cells(chapter)
    texts = [canonical(kind, source) for kind, source, _ in cells]
    printed = [squeeze(output) for _, _, output in cells]
    leaks = []
    for name, block in solution_blocks(chapter).items():
        fragments = answer_fragments(block)
        for function in module.ANSWERS[name]:
            fragments |= answer_fragments(inspect.getsource(function))
        for number, (text, output) in enumerate(zip(texts, printed)):
            leaks += [f"{name}: cell {number} shows `{f}`" for f in sorted(fragments) if f in text or f in output]
        asked = next(i for i, (kind, source, _) in enumerate(cells) if kind == "code" and f"def {name}(" in source
                     and STUB in source)
        for expression in computed_expressions(block):
            leaks += [f"{name}: cell {number} computes `{expression}` before the exercise asks for it"
                      for number, (kind, source, _) in enumerate(cells[:asked])
                      if kind == "code" and expression in canonical(kind, source)]
        for value in module.KEY_NUMBERS.get(name, []):
            pattern = number_pattern(value)
            for number, (_kind, source, output) in enumerate(cells):
                where = source + ("\n" + output if number < asked else "")
                if pattern.search(where):
                    leaks.append(f"{name}: cell {number} shows {value:,}, which the exercise asks for")
    assert not leaks, f"{chapter.name}:\n" + "\n".join(leaks)


def test_leak_rules_catch_an_answer_computed_early_and_a_value_printed_early():
    assert "V*E+E*H+H" in computed_expressions("return V * E + E * H + H")
    assert computed_expressions("return a + b") == set()  # one operation is ordinary code, not an answer
    assert number_pattern(6 / 11).search("p(n): [0.5455 0.2727 0.1818]")
    assert not number_pattern(6 / 11).search("15.5455")
    assert number_pattern(1280).search("1,280 parameters") and not number_pattern(1280).search("11280")


def test_chapter_1_gives_the_race_answers_only_after_the_reader_has_tried():
    """The answer key comes after the section that follows the questions, not under them."""
    chapter = CHAPTERS / "01_why_albert.py"
    cells = readable_cells(chapter)
    questions = next(i for i, (_, _, output) in enumerate(cells) if "1. Why did the seed shelf" in output)
    key = [i for i, (kind, source, output) in enumerate(cells) if re.search(r"1 B, 2 C, 3 D", source + output)]
    assert key, "chapter 1 no longer gives the answers to its RACE questions"
    section_end = next(i for i, (kind, source, _) in enumerate(cells)
                       if i > questions and kind == "markdown" and "### How a BERT-style model answers" in source)
    assert min(key) > section_end + 1, "the RACE answers are shown right under the questions"
    # and no cell between the questions and the key prints the right option of a question
    options = ["Bean seeds are easy to collect", "twice as many visitors", "sharing can work for more than books"]
    shown = [o for _, _, output in cells[questions + 1:min(key)] for o in options if o in output]
    assert shown == []
