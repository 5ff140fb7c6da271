"""A hand-out folder for a class: the chapters as notebooks without outputs, and the figures they show.

    python -m albert_mini.book.exercises.student chapters/*.py --out build/student     # what `make exercises` runs
    python -m albert_mini.book.exercises.student chapters/*.py --out build/student --with-solutions

The chapters already show every exercise unsolved (a stub and a check cell, with nbgrader's cell metadata) and
keep their solutions apart, in chapters/solutions/. This command only packs what a student needs outside the
checkout: OUT/chapters/NN_name.ipynb for each chapter given, with no outputs, and OUT/figures/ with every figure
the chapters' text links (`../figures/x.png`), so no image is broken. --with-solutions adds
OUT/chapters/solutions/, for after the deadline. Students still need the package installed (`make venv`).

For nbgrader, --nbgrader-source writes its "source" version instead: OUT/source/NN_name/NN_name.ipynb, each
stub replaced by the solution's body between nbgrader's `### BEGIN SOLUTION` / `### END SOLUTION` markers (the
cells already carry its metadata), and OUT/source/figures/; `nbgrader generate_assignment NN_name` then makes
the release version, whose stubs the checks report as "not attempted yet".
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import sys
from pathlib import Path

from ...cli import Parser
from ...cli import run as run_cli
from ...errors import MissingFileError
from ...safe_files import UnsafeWriteError, atomic_write_text, check_out_folder
from .solutions import defined_function, solution_cells, solutions_path

FIGURE_LINK = re.compile(r"\]\(\.\./figures/([^)\s]+)\)")  # a markdown image of the checkout's figures/
STUB = 'raise NotImplementedError("write your solution here")'
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"  # nbgrader's markers of a solution region


def student_notebook(chapter: Path):
    """The chapter as a notebook without outputs or execution counts, ready to hand out."""
    import jupytext

    notebook = jupytext.read(chapter)
    notebook.metadata.pop("jupytext", None)  # a hand-out is a plain notebook: saving it writes no paired .py
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


def solution_bodies(solutions: Path) -> dict[str, list[str]]:
    """Exercise name -> the lines of its solution's body (after the docstring), as indented in the file."""
    bodies = {}
    for cell in solution_cells(solutions):
        name = defined_function(cell.source) if cell.cell_type == "code" else None
        if not name or name in bodies:
            continue
        function = next(n for n in ast.parse(cell.source).body if isinstance(n, ast.FunctionDef) and n.name == name)
        body = function.body
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        bodies[name] = cell.source.splitlines()[body[0].lineno - 1:body[-1].end_lineno]
    return bodies


def nbgrader_source(notebook, solutions: Path):
    """The notebook with every stub's raise replaced by its solution between nbgrader's solution markers."""
    bodies = solution_bodies(solutions)
    for cell in notebook.cells:
        name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type != "code" or name not in bodies or STUB not in cell.source:
            continue
        lines = []
        for line in cell.source.splitlines():
            if line.strip() == STUB:
                indent = line[: len(line) - len(line.lstrip())]
                lines += [indent + BEGIN, *bodies[name], indent + END]
            else:
                lines.append(line)
        cell.source = "\n".join(lines)
    return notebook


def linked_figures(notebook) -> list[str]:
    """The file names under figures/ that the notebook's markdown shows."""
    return sorted({name for cell in notebook.cells if cell.cell_type == "markdown"
                   for name in FIGURE_LINK.findall(cell.source)})


def main(argv: list[str] | None = None) -> int:
    """Command line: write the hand-out folder; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    import jupytext

    parser = Parser(prog="python -m albert_mini.book.exercises.student",
                    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="+", type=Path, help="chapter sources (chapters/NN_name.py)")
    parser.add_argument("--out", type=Path, default=Path("build/student"), help="the hand-out folder")
    parser.add_argument("--with-solutions", action="store_true", help="add chapters/solutions/ to the hand-out")
    parser.add_argument("--nbgrader-source", action="store_true",
                        help="write nbgrader's source version (solutions between its markers) to OUT/source/")
    args = parser.parse_args(argv)
    check_out_folder(args.out)  # before any notebook is built
    for chapter in args.chapters:
        if not chapter.is_file():
            raise MissingFileError(f"chapter {chapter} is not a file; pass chapter sources such as chapters/*.py")
        if chapter.parent.resolve() in (args.out.resolve(), (args.out / "chapters").resolve()):
            raise UnsafeWriteError(f"--out {args.out} is the folder of the chapters, so the hand-out would "
                                   "replace their executed .ipynb copies; choose another --out, e.g. build/student")
    figures = set()
    for chapter in args.chapters:
        notebook = student_notebook(chapter)
        target = args.out / "chapters" / chapter.with_suffix(".ipynb").name
        if args.nbgrader_source:
            notebook = nbgrader_source(notebook, solutions_path(chapter))
            target = args.out / "source" / chapter.stem / chapter.with_suffix(".ipynb").name
        text = jupytext.writes(notebook, fmt="ipynb")
        atomic_write_text(target, text if text.endswith("\n") else text + "\n")
        figures |= {chapter.parent.parent / "figures" / name for name in linked_figures(notebook)}
        print(f"{chapter} -> {target}")
        solutions = solutions_path(chapter)
        if args.with_solutions and solutions.is_file() and not args.nbgrader_source:
            atomic_write_text(args.out / "chapters" / "solutions" / solutions.name, solutions.read_text())
            print(f"{solutions} -> {args.out / 'chapters' / 'solutions' / solutions.name}")
    for figure in sorted(figures):
        if not figure.is_file():
            raise MissingFileError(f"{figure} is linked by a chapter but missing; run `make book` to draw it")
        figure_folder = args.out / ("source/figures" if args.nbgrader_source else "figures")
        figure_folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(figure, figure_folder / figure.name)
    print(f"{args.out}: {len(args.chapters)} chapters and {len(figures)} figures they link")
    return 0


if __name__ == "__main__":
    sys.exit(main())
