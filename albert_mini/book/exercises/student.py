"""A hand-out folder for a class: the chapters as notebooks without outputs, and the figures they show.

    albert-mini exercises chapters/*.py --out build/student     # what `make exercises` runs
    albert-mini exercises chapters/*.py --out build/student --with-solutions

The chapters already show every exercise unsolved (a stub and a check cell, with nbgrader's cell metadata) and
keep their solutions apart, in chapters/solutions/. This command only packs what a student needs outside the
checkout: OUT/chapters/NN_name.ipynb for each chapter given, with no outputs, OUT/figures/ with every figure
the chapters' text links (`../figures/x.png`), so no image is broken, and OUT/chapters/REFERENCE_NOTES.md, which
chapters link. --with-solutions adds OUT/chapters/solutions/, for after the deadline. Students still need the
package installed (`make venv`).

For nbgrader, --nbgrader-source writes its "source" version instead: OUT/source/NN_name/NN_name.ipynb, each
stub's raise replaced by the solution's body between nbgrader's `### BEGIN SOLUTION` / `### END SOLUTION`
markers (the cells already carry its metadata), and every figure the text links embedded in its markdown cell
as an attachment (`attachment:x.png`): nbgrader releases one folder per assignment, where `../figures/` would
not exist. `nbgrader generate_assignment NN_name` then makes the release version, whose stubs (def line and
docstring kept, as the markers stand around the raise alone) the checks report as "not attempted yet".

Every chapter and solutions file is read as the last git commit holds it (a teacher's answers autosaved into
a chapter by JupyterLab are never handed out); a file that differs is named in one line. Outside a git
checkout the files are read as they are.

A rerun replaces only what it wrote itself and nobody has changed since (OUT/.albert-mini-outputs.json records the
files and their sha256): a notebook a learner edited in the hand-out folder is refused, naming it, unless
--overwrite is given. The record lists each file before it is written, so a run killed at any point is finished
by the same command, without --overwrite.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from ...errors import MissingFileError
from ...paths import sha256_bytes
from ...safe_files import OutputRecord, UnsafeWriteError, Writes, atomic_write_bytes, check_writes
from .committed import committed_bytes, differs_note
from .solutions import defined_function, solution_cells, solutions_path

FIGURE_LINK = re.compile(r"\]\(\.\./figures/([^)\s]+)\)")  # a markdown image of the checkout's figures/
STUB = 'raise NotImplementedError("write your solution here")'
NOTES = "REFERENCE_NOTES.md"  # linked from the chapters' text: the hand-out carries it beside them
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"  # nbgrader's markers of a solution region


def student_notebook(chapter: Path, text: str | None = None):
    """The chapter (or `text` given as its source) as a notebook without outputs or execution counts."""
    import jupytext

    notebook = jupytext.read(chapter) if text is None else jupytext.reads(text, fmt="py:percent")
    notebook.metadata.pop("jupytext", None)  # a hand-out is a plain notebook: saving it writes no paired .py
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


def solution_bodies(solutions: Path, text: str | None = None) -> dict[str, list[str]]:
    """Exercise name -> the lines of its solution's body (after the docstring), as indented in the file."""
    bodies = {}
    for cell in solution_cells(solutions, text):
        name = defined_function(cell.source) if cell.cell_type == "code" else None
        if not name or name in bodies:
            continue
        function = next(n for n in ast.parse(cell.source).body if isinstance(n, ast.FunctionDef) and n.name == name)
        body = function.body
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        bodies[name] = cell.source.splitlines()[body[0].lineno - 1:body[-1].end_lineno]
    return bodies


def nbgrader_source(notebook, solutions: Path, text: str | None = None):
    """The notebook with every stub's raise replaced by its solution, between nbgrader's solution markers (the
    chapters' stubs already stand between them, so that generate_assignment keeps each signature and docstring)."""
    bodies = solution_bodies(solutions, text)
    for cell in notebook.cells:
        name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type != "code" or name not in bodies or STUB not in cell.source:
            continue
        lines = []
        for line in cell.source.splitlines():
            if line.strip() != STUB:
                lines.append(line)
            elif lines and lines[-1].strip() == BEGIN:  # the chapter's markers: only the body goes between them
                lines += bodies[name]
            else:
                indent = line[: len(line) - len(line.lstrip())]
                lines += [indent + BEGIN, *bodies[name], indent + END]
        cell.source = "\n".join(lines)
    return notebook


def embed_figures(notebook, figures: Path):
    """The notebook with every `../figures/x.png` its markdown links carried by the cell as attachment `x.png`."""
    import base64
    import mimetypes

    for cell in notebook.cells:
        names = sorted(set(FIGURE_LINK.findall(cell.source))) if cell.cell_type == "markdown" else []
        for name in names:
            figure = figures / name
            if not figure.is_file():
                raise MissingFileError(f"{figure} is linked by a chapter but missing; run `make book` to draw it")
            kind = mimetypes.guess_type(name)[0] or "image/png"
            cell.setdefault("attachments", {})[name] = {kind: base64.b64encode(figure.read_bytes()).decode("ascii")}
            cell.source = cell.source.replace(f"](../figures/{name})", f"](attachment:{name})")
    return notebook


def linked_figures(notebook) -> list[str]:
    """The file names under figures/ that the notebook's markdown shows."""
    return sorted({name for cell in notebook.cells if cell.cell_type == "markdown"
                   for name in FIGURE_LINK.findall(cell.source)})


def handout_files(chapters: list[Path], out: Path, with_solutions: bool = False, for_nbgrader: bool = False,
                  say=print) -> dict[Path, tuple[Path, bytes | None]]:
    """Every file the hand-out folder `out` gets: target -> (its source, its bytes; None for a figure's copy).
    Chapters and solutions are read as git last committed them (`say` names each working file that differs)."""
    import jupytext

    def committed(path: Path) -> bytes:
        data, differs = committed_bytes(path)
        if differs:
            say(differs_note(path))
        return data

    files: dict[Path, tuple[Path, bytes | None]] = {}
    figures = set()
    for chapter in chapters:
        notebook = student_notebook(chapter, committed(chapter).decode("utf-8"))
        target = out / "chapters" / chapter.with_suffix(".ipynb").name
        solutions = solutions_path(chapter)
        if for_nbgrader:
            notebook = nbgrader_source(notebook, solutions, committed(solutions).decode("utf-8"))
            notebook = embed_figures(notebook, chapter.parent.parent / "figures")  # so linked_figures is empty
            target = out / "source" / chapter.stem / chapter.with_suffix(".ipynb").name
        text = jupytext.writes(notebook, fmt="ipynb")
        files[target] = (chapter, (text if text.endswith("\n") else text + "\n").encode("utf-8"))
        figures |= {chapter.parent.parent / "figures" / name for name in linked_figures(notebook)}
        notes = chapter.parent / NOTES
        if notes.is_file() and f"]({NOTES}" in text:  # nbgrader releases one folder per assignment: a copy in each
            files[target.parent / NOTES] = (notes, committed(notes))
        if with_solutions and solutions.is_file() and not for_nbgrader:
            files[out / "chapters" / "solutions" / solutions.name] = (solutions, committed(solutions))
    for figure in sorted(figures):
        if not figure.is_file():
            raise MissingFileError(f"{figure} is linked by a chapter but missing; run `make book` to draw it")
        files[out / "figures" / figure.name] = (figure, None)
    return files


def write_handout(chapters: list[Path], out: Path, with_solutions: bool = False, for_nbgrader: bool = False,
                  say=print, overwrite: bool = False, writes: Writes | None = None) -> int:
    """Write the hand-out folder `out` for `chapters` (see the module's docstring); returns the figures copied.

    The write rule (albert_mini.safe_files, checked before anything is written, as `writes` declares it): a file
    already in `out` is replaced only when this command wrote it there and nobody changed it since (the folder's
    record of its outputs), or with `overwrite`; so a learner's edited notebook is never lost to a rerun.
    """
    check = writes.check if writes is not None else functools.partial(check_writes, "exercises")
    check(folders=[("--out", out)])  # before any notebook is built
    for chapter in chapters:
        if not chapter.is_file():
            raise MissingFileError(f"chapter {chapter} is not a file; pass chapter sources such as chapters/*.py")
        if chapter.parent.resolve() in (out.resolve(), (out / "chapters").resolve()):
            raise UnsafeWriteError(f"--out {out} is the folder of the chapters, so the hand-out would "
                                   "replace their executed .ipynb copies; choose another --out, e.g. build/student")
    files = handout_files(chapters, out, with_solutions, for_nbgrader, say)
    record = OutputRecord(out, "exercises")
    check(files=[("--out", target) for target in files], folders=[("--out", out)],
          inputs=[source for source, _ in files.values()], overwrite=overwrite, own=record.own())
    contents = {target: source.read_bytes() if data is None else data for target, (source, data) in files.items()}
    # Listed before they are written, each written atomically: a kill at any point leaves files the record knows
    # (as they were, or as this run writes them), so the same command run again needs no --overwrite.
    record.expect({target: sha256_bytes(data) for target, data in contents.items()})
    try:
        for leftover in record.leftovers():  # the temp file of a write killed before its rename
            leftover.unlink()
        for target, (source, data) in files.items():
            atomic_write_bytes(target, contents[target])
            record.add(target)
            if data is not None:
                say(f"{source} -> {target}")
    finally:
        record.save()
    return sum(data is None for _, data in files.values())
