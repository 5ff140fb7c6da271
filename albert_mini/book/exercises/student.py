"""Generate student notebooks: every solution between the markers becomes a stub that raises NotImplementedError.

    python -m albert_mini.book.exercises.student chapters/*.py --out build/student     # what `make exercises` runs

In a chapter source, a solution is written inside a code cell between two marker lines:

    def trust_ratio(w, u):
        ### BEGIN SOLUTION
        ...the reference answer...
        ### END SOLUTION

A cell that shows an answer outside such a block (the package's own version printed after the exercise, or prose
that gives the number an exercise asks for) carries the cell tag `solution`, and is left out of the student
notebook. In a chapter source the tag is written on the cell marker:

    # %% tags=["solution"]
    print(inspect.getsource(replace_80_10_10))

    # %% [markdown] tags=["solution"]
    # The factorized head is ... times cheaper ...

tests/book/test_student_notebooks.py checks that no student notebook shows a reference answer.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ...cli import Parser
from ...cli import run as run_cli
from ...errors import MissingFileError
from ...safe_files import UnsafeWriteError, atomic_write_text, check_out_folder

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
SOLUTION_TAG = "solution"  # a cell that reveals an answer: in the published chapter, not in the student notebook
_BLOCK = re.compile(rf"^([ \t]*){re.escape(BEGIN)}[^\n]*\n.*?^[ \t]*{re.escape(END)}[^\n]*$", re.M | re.S)


def strip_solutions(source: str, label: str = "this exercise") -> str:
    """Replace every marked solution block with a NotImplementedError stub at the same indentation."""
    if source.count(BEGIN) != source.count(END):
        raise ValueError(f"{label}: {source.count(BEGIN)} '{BEGIN}' markers but {source.count(END)} '{END}'")
    return _BLOCK.sub(lambda m: f'{m.group(1)}raise NotImplementedError("write your solution here")', source)


def reveals_answer(cell) -> bool:
    """Whether a cell carries the `solution` tag (it shows an exercise's answer)."""
    return SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def student_notebook(chapter: Path):
    """The chapter as a notebook without solutions, cells that reveal them, or outputs, ready to hand out."""
    import jupytext

    notebook = jupytext.read(chapter)
    notebook.cells = [cell for cell in notebook.cells if not reveals_answer(cell)]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source, chapter.name)
            cell.outputs, cell.execution_count = [], None
    return notebook


def main(argv: list[str] | None = None) -> int:
    """Command line: write student notebooks; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    import jupytext

    parser = Parser(prog="python -m albert_mini.book.exercises.student",
                    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="+", type=Path, help="chapter sources (chapters/NN_name.py)")
    parser.add_argument("--out", type=Path, default=Path("build/student"), help="folder for the student notebooks")
    args = parser.parse_args(argv)
    check_out_folder(args.out)  # before any notebook is built
    for chapter in args.chapters:
        if not chapter.is_file():
            raise MissingFileError(f"chapter {chapter} is not a file; pass chapter sources such as chapters/*.py")
        if args.out.resolve() == chapter.parent.resolve():
            raise UnsafeWriteError(f"--out {args.out} is the folder of the chapters, so the student notebooks would "
                                   "replace their executed .ipynb copies; choose another --out, e.g. build/student")
    for chapter in args.chapters:
        target = args.out / chapter.with_suffix(".ipynb").name
        text = jupytext.writes(student_notebook(chapter), fmt="ipynb")
        atomic_write_text(target, text if text.endswith("\n") else text + "\n")
        print(f"{chapter} -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
