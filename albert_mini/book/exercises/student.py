"""A hand-out folder for a class: the chapters as notebooks without outputs, and the figures they show.

    python -m albert_mini.book.exercises.student chapters/*.py --out build/student     # what `make exercises` runs
    python -m albert_mini.book.exercises.student chapters/*.py --out build/student --with-solutions

The chapters already show every exercise unsolved (a stub and a check cell, with nbgrader's cell metadata) and
keep their solutions apart, in chapters/solutions/. This command only packs what a student needs outside the
checkout: OUT/chapters/NN_name.ipynb for each chapter given, with no outputs, and OUT/figures/ with every figure
the chapters' text links (`../figures/x.png`), so no image is broken. --with-solutions adds
OUT/chapters/solutions/, for after the deadline. Students still need the package installed (`make venv`).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from ...cli import Parser
from ...cli import run as run_cli
from ...errors import MissingFileError
from ...safe_files import UnsafeWriteError, atomic_write_text, check_out_folder
from .solutions import solutions_path

FIGURE_LINK = re.compile(r"\]\(\.\./figures/([^)\s]+)\)")  # a markdown image of the checkout's figures/


def student_notebook(chapter: Path):
    """The chapter as a notebook without outputs or execution counts, ready to hand out."""
    import jupytext

    notebook = jupytext.read(chapter)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
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
        text = jupytext.writes(notebook, fmt="ipynb")
        atomic_write_text(target, text if text.endswith("\n") else text + "\n")
        figures |= {chapter.parent.parent / "figures" / name for name in linked_figures(notebook)}
        print(f"{chapter} -> {target}")
        solutions = solutions_path(chapter)
        if args.with_solutions and solutions.is_file():
            atomic_write_text(args.out / "chapters" / "solutions" / solutions.name, solutions.read_text())
            print(f"{solutions} -> {args.out / 'chapters' / 'solutions' / solutions.name}")
    for figure in sorted(figures):
        if not figure.is_file():
            raise MissingFileError(f"{figure} is linked by a chapter but missing; run `make book` to draw it")
        (args.out / "figures").mkdir(parents=True, exist_ok=True)
        shutil.copy2(figure, args.out / "figures" / figure.name)
    print(f"{args.out}: {len(args.chapters)} chapters and {len(figures)} figures they link")
    return 0


if __name__ == "__main__":
    sys.exit(main())
