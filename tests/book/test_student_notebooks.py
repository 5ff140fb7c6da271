"""What a learner opens shows no answer: the chapters (and `make exercises`' hand-out, which also carries every
figure they link) hold each exercise unsolved, never show a reference answer's code, and compute no answer
before its exercise asks for it (its solution's arithmetic or call chain, or the number it asks for)."""

import ast
import importlib
import inspect
import math
import re
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from albert_mini.book.exercises import chapter_exercises, chapters_with_exercises
from albert_mini.book.exercises.solutions import defined_function, solution_cells, solutions_path
from albert_mini.book.exercises.student import FIGURE_LINK
from albert_mini.commands.exercises import main as hand_out

jupytext = pytest.importorskip("jupytext")

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
WITH_EXERCISES = [next(CHAPTERS.glob(f"{number}_*.py")) for number in chapters_with_exercises()]
STUB = 'raise NotImplementedError("write your solution here")'
MIN_FRAGMENT = 12  # shorter pieces of code (`return out`, `if swap:`) are not an answer


# ------------------------------------------------------------------------------------------- the hand-out
def test_the_hand_out_has_every_chapter_without_outputs_and_every_figure_it_links(tmp_path, capsys):
    import nbformat

    sources = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))
    assert hand_out([str(p) for p in sources] + ["--out", str(tmp_path), "--with-solutions"]) == 0
    notebooks = sorted((tmp_path / "chapters").glob("*.ipynb"))
    assert [n.stem for n in notebooks] == [p.stem for p in sources]
    links = []
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")
        assert "jupytext" not in notebook.metadata  # not paired: saving it in JupyterLab writes no .py beside it
        links += [(path, name) for c in notebook.cells if c.cell_type == "markdown"
                  for name in FIGURE_LINK.findall(c.source)]
    assert len(links) >= 2  # chapters 05 and 08 show committed experiment figures
    broken = [f"{path.name}: ../figures/{name}" for path, name in links
              if not (path.parent / ".." / "figures" / name).is_file()]
    assert broken == []
    assert sorted(p.name for p in (tmp_path / "chapters" / "solutions").glob("*.py")) == [
        p.name for p in WITH_EXERCISES]
    assert "figures they link" in capsys.readouterr().out


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


def exercise_module(chapter: Path):
    return importlib.import_module(f"albert_mini.book.exercises.ch{chapter.name[:2]}")


def number_pattern(n: int | float) -> re.Pattern:
    """A whole number as printed with or without thousands commas; a fraction to 3 or 4 decimals, and a simple
    fraction (at most 100 below the line) also as one: 6/11, 6 / 11, \\frac{6}{11}, \\tfrac{6}{11}."""
    if isinstance(n, float):
        spellings = {f"{n:.4f}", f"{n:.3f}"}
        exact = Fraction(n).limit_denominator(100)
        if exact.denominator > 1 and math.isclose(float(exact), n, rel_tol=1e-12):
            top, bottom = exact.numerator, exact.denominator
            spellings |= {f"{top}/{bottom}", f"{top} / {bottom}", f"\\frac{{{top}}}{{{bottom}}}",
                          f"\\tfrac{{{top}}}{{{bottom}}}", f"\\dfrac{{{top}}}{{{bottom}}}"}
        spellings = sorted(spellings, key=len, reverse=True)
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




def call_chains(code: str) -> set[str]:
    """Method calls on the result of a call (`np.isin(types_b, a).mean()` -> `np.isin(...).mean()`): how an
    answer is computed, whatever its variables are called."""
    found = set()
    for node in ast.walk(ast.parse(textwrap.dedent(code))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Call)):
            inner = ast.unparse(node.func.value.func)
            if "." in inner:  # a library's function (np.isin), not a name of the chapter's
                found.add(f"{inner}(...).{node.func.attr}(...)")
    return found


def solution_sections(chapter: Path) -> dict[str, list[str]]:
    """Exercise name -> the source of every function its part of the solutions file defines (alternatives too)."""
    sections, current = {}, None
    for cell in solution_cells(solutions_path(chapter)):
        name = defined_function(cell.source) if cell.cell_type == "code" else None
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            current = None
        if name:
            if current is None and name in chapter_exercises(chapter.name[:2]):
                current = name
            if current:
                sections.setdefault(current, []).append(function_source(cell.source, name))
    return sections


def function_source(source: str, name: str) -> str:
    """The text of function `name` alone from a cell (its imports and asserts left out)."""
    tree = ast.parse(source)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return "\n".join(source.splitlines()[function.lineno - 1:function.end_lineno])


def readable_cells(chapter: Path) -> list[tuple[str, str, str]]:
    """(cell type, source, committed output) of every cell of the chapter, in order: what a learner reads, and
    what a cell prints when it is run (the outputs of the executed chapter)."""
    source_cells = jupytext.read(chapter).cells
    executed = jupytext.read(chapter.with_suffix(".ipynb")).cells
    assert len(executed) == len(source_cells), f"{chapter.name}: run `make book`"
    return [(cell.cell_type, cell.source, output_text(run)) for cell, run in zip(source_cells, executed)]


def exercise_cell(cells, name: str) -> int:
    return next(i for i, (kind, source, _) in enumerate(cells) if kind == "code" and f"def {name}(" in source
                and STUB in source)


def leaks_in(chapter: Path, cells: list[tuple[str, str, str]]) -> list[str]:
    """Every way `cells` give an answer away: a reference answer's code anywhere (in a cell or what it prints);
    before the exercise, its arithmetic, its call chain, or a number it asks for."""
    module = exercise_module(chapter)
    texts = [canonical(kind, source) for kind, source, _ in cells]
    printed = [squeeze(output) for _, _, output in cells]
    leaks = []
    for name, solutions in solution_sections(chapter).items():
        answers = solutions + [inspect.getsource(f) for f in module.ANSWERS[name]]
        fragments = set().union(*(answer_fragments(code) for code in answers))
        for number, (text, output) in enumerate(zip(texts, printed)):
            leaks += [f"{name}: cell {number} shows `{f}`" for f in sorted(fragments) if f in text or f in output]
        asked = exercise_cell(cells, name)
        early = [(n, source) for n, (kind, source, _) in enumerate(cells[:asked]) if kind == "code"]
        for expression in set().union(*(computed_expressions(code) for code in solutions)):
            leaks += [f"{name}: cell {n} computes `{expression}` before the exercise asks for it"
                      for n, source in early if expression in canonical("code", source)]
        for chain in set().union(*(call_chains(code) for code in answers)):
            leaks += [f"{name}: cell {n} computes `{chain}`, as its answer does, before the exercise asks for it"
                      for n, source in early if chain in call_chains(source)]
        for value in module.KEY_NUMBERS.get(name, []):
            pattern = number_pattern(value)
            for number, (_kind, source, output) in enumerate(cells):
                if pattern.search(source + ("\n" + output if number < asked else "")):
                    leaks.append(f"{name}: cell {number} shows {value:,}, which the exercise asks for")
    return leaks


def test_every_exercise_declares_its_answers():
    for chapter in WITH_EXERCISES:
        module = exercise_module(chapter)
        checks = {name[len("check_"):] for name in dir(module)
                  if name.startswith("check_")}
        assert checks == set(module.ANSWERS), f"{module.__name__}: ANSWERS must name every exercise"
        assert checks == set(solution_sections(chapter)), f"{chapter.name}: one solution per exercise"


@pytest.mark.parametrize("chapter", WITH_EXERCISES, ids=lambda p: p.name)
def test_the_chapter_gives_no_answer_away(chapter):
    leaks = leaks_in(chapter, readable_cells(chapter))
    assert not leaks, f"{chapter.name}:\n" + "\n".join(leaks)


def test_leak_rules_catch_an_answer_computed_early_and_a_value_printed_early():
    assert "V*E+E*H+H" in computed_expressions("return V * E + E * H + H")
    assert computed_expressions("return a + b") == set()  # one operation is ordinary code, not an answer
    assert call_chains("overlap = np.isin(types_b, a).mean()") == {"np.isin(...).mean(...)"}
    assert call_chains("x = f(a).mean()") == set()  # a chapter's own helper is not a library's answer
    assert number_pattern(6 / 11).search("p(n): [0.5455 0.2727 0.1818]")
    assert not number_pattern(6 / 11).search("15.5455")
    for prose in ("(6/11, 3/11, 2/11)", "$6 / 11$", r"$\tfrac{6}{11}$", r"\frac{6}{11}"):  # chapter 6's leak
        assert number_pattern(6 / 11).search(prose), prose
    assert not number_pattern(6 / 11).search("16/11 and 6/110") and not number_pattern(6 / 11).search("11/6")
    assert number_pattern(1280).search("1,280 parameters") and not number_pattern(1280).search("11280")


def test_the_leak_test_catches_chapter_5s_overlap_computed_before_its_exercise():
    """A leak found in review: a topic probe computing Exercise 3's overlap seven cells before it asks."""
    chapter = CHAPTERS / "05_sentence_order_prediction.py"
    cells = readable_cells(chapter)
    early = ("def topic_features(instances):\n    rows = []\n    for inst in instances:\n"
             "        a, b = inst.segments()\n        types_b = np.unique(b)\n"
             "        overlap = np.isin(types_b, a).mean()\n        rows.append(overlap)\n    return rows\n")
    planted = cells[:exercise_cell(cells, "overlap_feature") - 7] + [("code", early, "")] + cells[
        exercise_cell(cells, "overlap_feature") - 7:]
    assert any("np.isin(...).mean(...)" in leak for leak in leaks_in(chapter, planted))
    number = ("code", "print(f'{0.5:.4f}')", "0.5455")  # a value printed early: chapter 6's p(1) for N = 3
    chapter_6 = CHAPTERS / "06_ngram_masking.py"
    assert any("which the exercise asks for" in leak for leak in leaks_in(chapter_6, [number] + readable_cells(
        chapter_6)))


def test_chapter_1_keeps_the_race_answers_in_its_solutions():
    """The questions come without their answers; the key and the skill each question tests are in the solutions."""
    chapter = CHAPTERS / "01_why_albert.py"
    cells = readable_cells(chapter)
    questions = next(i for i, (_, source, _) in enumerate(cells) if "Why did the seed shelf" in source)
    assert '"answer"' not in cells[questions][1]
    shown = [i for i, (_, source, output) in enumerate(cells) if re.search(r"1 B, 2 C, 3 D", source + output)]
    assert shown == []
    options = ["Bean seeds are easy to collect", "twice as many visitors", "sharing can work for more than books"]
    elsewhere = [o for i, (_, source, output) in enumerate(cells) if i != questions for o in options
                 if o in source + output]
    assert elsewhere == [], "a cell other than the questions names a right option"
    key = solutions_path(chapter).read_text()
    assert "**1 B, 2 C, 3 D**" in key and "Try the three questions" in key  # folded under the questions in HTML


def test_the_nbgrader_source_version_holds_each_solution_between_nbgraders_markers(tmp_path):
    """nbgrader's generate_assignment turns a solution region back into a stub; the source version must hold
    a region per exercise, whose code passes the exercise's check."""
    import nbformat

    assert hand_out([str(p) for p in WITH_EXERCISES] + ["--out", str(tmp_path), "--nbgrader-source"]) == 0
    for chapter in WITH_EXERCISES:
        notebook = nbformat.read(tmp_path / "source" / chapter.stem / f"{chapter.stem}.ipynb", as_version=4)
        for name, exercise in chapter_exercises(chapter.name[:2]).items():
            check = exercise.check
            cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == name)
            assert STUB not in cell.source and cell.source.count("### BEGIN SOLUTION") == 1
            if chapter.name.startswith(("02", "03", "05", "09")):  # cheap checks, and cells that run on their own
                namespace = {}
                exec("from __future__ import annotations\n" + cell.source, namespace)
                assert check(namespace[name]) is True


def test_the_nbgrader_source_version_carries_its_figures_as_attachments(tmp_path):
    """nbgrader releases one folder per assignment, so `../figures/x.png` would show nothing there: every linked
    figure travels in its markdown cell as an attachment, and no figures/ folder is left for nbgrader to take for
    an assignment."""
    import base64

    import nbformat

    shown = {"05_sentence_order_prediction": "experiment_sentence_task.png",
             "08_fine_tuning": "experiment_finetune.png"}
    chapters = [CHAPTERS / f"{stem}.py" for stem in shown]
    assert hand_out([str(p) for p in chapters] + ["--out", str(tmp_path), "--nbgrader-source"]) == 0
    assert sorted(p.name for p in (tmp_path / "source").iterdir()) == sorted(shown)
    for stem, name in shown.items():
        notebook = nbformat.read(tmp_path / "source" / stem / f"{stem}.ipynb", as_version=4)
        assert not [c for c in notebook.cells if "../figures/" in c.source]
        cell = next(c for c in notebook.cells if f"](attachment:{name})" in c.source)
        embedded = base64.b64decode(cell.attachments[name]["image/png"])
        assert embedded == (CHAPTERS.parent / "figures" / name).read_bytes()


def test_a_missing_figure_stops_the_nbgrader_source_naming_it(tmp_path):
    import nbformat

    from albert_mini.book.exercises.student import embed_figures
    from albert_mini.errors import MissingFileError

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("![a plot](../figures/gone.png)")])
    with pytest.raises(MissingFileError, match=r"gone.png is linked by a chapter but missing; run `make book`"):
        embed_figures(notebook, tmp_path)
