"""Grade a class: run every submitted chapter notebook and write one gradebook row per student, chapter, exercise.

    albert-mini grade SUBMISSIONS                       # what `make grade SUBMISSIONS=...` runs
    albert-mini grade SUBMISSIONS --out marks.csv --time-limit 300 --overwrite

SUBMISSIONS holds one folder per student with that student's notebooks (`05_sentence_order_prediction.ipynb`,
...). Each notebook runs in a fresh kernel, in a scratch folder (the student's files are only read), with the
network refused and at most --time-limit seconds for the whole notebook. Each exercise is graded where its
check cell stands (its nbgrader `grade_id`, or the `check_<name>(...)` call), by the same check the chapter
runs, on the function the student defined by then; a check cell the student deleted is run at the end.

The gradebook (default SUBMISSIONS/gradebook.csv, never overwritten without --overwrite) has the columns
student, chapter, exercise, passed (yes/no), message. A notebook that raises, crashes its kernel, runs out of
time, was renamed, or is missing still gets its rows, with the reason, and the other notebooks are graded.
Chapters run in fast mode (ALBERT_MINI_FAST=1) unless --full: the checks do not depend on it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from ..cli import one_line
from ..errors import MissingFileError
from ..paths import repo_root

COLUMNS = ("student", "chapter", "exercise", "passed", "message")
RESULT_MARK = "albert-mini-grade:"  # the line a grading cell prints, followed by the verdict as JSON
DEFAULT_TIME_LIMIT = 600.0

# Run first in every graded kernel: refuse connections beyond this machine (DNS included), keep figures out of
# the checkout's figures/, and draw without a display.
PREAMBLE = '''\
import socket as _socket

_LOCAL = ("127.0.0.1", "::1", "localhost")


def _offline_connect(self, address, _connect=_socket.socket.connect):
    if self.family in (_socket.AF_INET, _socket.AF_INET6) and address[0] not in _LOCAL:
        raise OSError(f"no network while grading (refused {address[0]})")
    return _connect(self, address)


def _offline_getaddrinfo(host, *args, _lookup=_socket.getaddrinfo, **kwargs):
    if host not in (None, *_LOCAL):
        raise OSError(f"no network while grading (refused {host})")
    return _lookup(host, *args, **kwargs)


_socket.socket.connect = _offline_connect
_socket.getaddrinfo = _offline_getaddrinfo

import albert_mini.paths as _paths

_paths.FIGURES_ROOT = _paths.Path(FIGURE_FOLDER)
'''


@dataclass
class Row:
    """One gradebook line."""

    student: str
    chapter: str
    exercise: str
    passed: bool
    message: str

    def cells(self) -> list[str]:
        message = re.sub(r"\.?[ \t]*\n\s*", "; ", self.message.strip())  # one line: a spreadsheet shows it whole
        message = re.sub(r"[ \t]+", " ", message)  # the checks align their lines with spaces
        return [self.student, self.chapter, self.exercise, "yes" if self.passed else "no", message]


# --------------------------------------------------------------------------------------------- in the kernel
def grade_in_kernel(namespace: dict, chapter: str, exercise: str) -> dict:
    """Run exercise's check on the function `namespace` holds; print and return {"passed", "message"}."""
    from .exercises import ExerciseFailed, chapter_exercises

    check = chapter_exercises(chapter)[exercise]
    function = namespace.get(exercise)
    if not callable(function):
        verdict = {"passed": False, "message": f"`{exercise}` is not defined as a function when its check runs "
                                               "(its cell was deleted, renamed or did not run)"}
    else:
        printed = io.StringIO()
        try:
            with redirect_stdout(printed):
                passed = check(function) is True
            lines = printed.getvalue().strip().splitlines()
            verdict = {"passed": passed, "message": lines[-1] if lines else ""}
        except ExerciseFailed as failure:
            verdict = {"passed": False, "message": str(failure)}
        except Exception as error:  # the student's code broke the check itself (e.g. returned a generator)
            verdict = {"passed": False, "message": f"the check stopped: {type(error).__name__}: {error}"}
    print(RESULT_MARK + json.dumps(verdict))
    return verdict


def grading_source(chapter: str, exercise: str) -> str:
    """The cell that stands in for an exercise's check cell in a graded run."""
    return (f"from albert_mini.book.grade import grade_in_kernel as _grade_in_kernel\n"
            f"_grade_in_kernel(globals(), {chapter!r}, {exercise!r});")


# --------------------------------------------------------------------------------------------- a submission
def chapter_files(root: Path | None = None) -> dict[str, str]:
    """Chapter number -> the notebook name a student hands in, for every chapter with exercises."""
    from .exercises import chapters_with_exercises

    folder = (root or repo_root()) / "chapters"
    names = {}
    for number in chapters_with_exercises():
        found = sorted(folder.glob(f"{number}_*.py"))
        names[number] = found[0].with_suffix(".ipynb").name if found else f"{number}_*.ipynb"
    return names


def check_cell_exercise(cell, exercises: dict[str, dict]) -> tuple[str, str] | None:
    """(chapter, exercise) when a code cell is an exercise's check cell (by nbgrader grade_id, or by its call)."""
    if cell.get("cell_type") != "code":
        return None
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    for chapter, names in exercises.items():
        for name in names:
            if grade_id == f"check_{name}" or re.search(rf"^\s*check_{name}\(", cell.get("source", ""), re.M):
                return chapter, name
    return None


def identify_chapter(notebook, path: Path, exercises: dict[str, dict], files: dict[str, str]) -> str | None:
    """The chapter a notebook belongs to: by its name, else by the exercises its check cells run."""
    number = path.name[:2]
    if number in exercises and path.name == files.get(number):
        return number
    found = [check_cell_exercise(cell, exercises) for cell in notebook.cells]
    chapters = [hit[0] for hit in found if hit]
    if chapters:
        return max(set(chapters), key=chapters.count)
    return number if number in exercises and re.match(r"\d\d_", path.name) else None


def error_text(output) -> str:
    return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".strip()


def grade_notebook(path: Path, student: str, chapter: str, time_limit: float, fast: bool = True,
                   note: str = "") -> list[Row]:
    """Run one notebook with its check cells replaced by grading cells; one Row per exercise of its chapter."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    from .exercises import chapter_exercises

    names = list(chapter_exercises(chapter))
    prefix = f"{note}; " if note else ""
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # not JSON, not a notebook: the student's file, reported in its rows
        return [Row(student, chapter, name, False, f"{prefix}{path.name} could not be read as a notebook "
                                                    f"({type(error).__name__}: {error})") for name in names]
    with tempfile.TemporaryDirectory(prefix="albert-mini-grade-") as scratch:
        cells = [nbformat.v4.new_code_cell(PREAMBLE.replace("FIGURE_FOLDER", repr(str(Path(scratch) / "figures"))))]
        origin = [None]  # the student's cell number (1-based) of each cell run
        graded_at = {}
        for number, cell in enumerate(notebook.cells, start=1):
            if cell.cell_type != "code":
                continue
            hit = check_cell_exercise(cell, {chapter: names})
            if hit and hit[1] not in graded_at:
                graded_at[hit[1]] = len(cells)
                cells.append(nbformat.v4.new_code_cell(grading_source(chapter, hit[1])))
            else:
                cells.append(nbformat.v4.new_code_cell(cell.source))
            origin.append(number)
        for name in names:
            if name not in graded_at:
                graded_at[name] = len(cells)
                cells.append(nbformat.v4.new_code_cell(grading_source(chapter, name)))
                origin.append(None)
        run = nbformat.v4.new_notebook(cells=cells, metadata=notebook.metadata)
        (Path(scratch) / "figures").mkdir()
        work = Path(scratch) / "work"
        shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        deadline = time.monotonic() + time_limit
        client = NotebookClient(run, kernel_name="python3", allow_errors=True, interrupt_on_timeout=False,
                                startup_timeout=int(time_limit) + 1,
                                timeout_func=lambda cell: max(1, int(deadline - time.monotonic()) + 1),
                                resources={"metadata": {"path": str(work)}})
        env = {**os.environ, "ALBERT_MINI_FAST": "1" if fast else "0", "MPLBACKEND": "Agg",
               "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        running = [0]  # the cell being run when the kernel stops

        def started(cell, cell_index, **_):
            running[0] = cell_index

        client.on_cell_execute = started
        stopped, stuck = "", None
        try:  # the kernel's own log lines (and its dying words) stay out of the teacher's terminal
            client.execute(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except CellTimeoutError:
            stopped, stuck = f"timed out: the notebook ran past the time limit of {time_limit:g} s", running[0]
        except DeadKernelError:
            stopped, stuck = "crashed: the kernel died (the process exited or ran out of memory)", running[0]
        except Exception as error:  # a kernel that would not start: report it on every row, grade the others
            stopped = f"could not run: {type(error).__name__}: {one_line(str(error))}"
    failed = [error_text(o) for o in cells[0].get("outputs", []) if o.get("output_type") == "error"]
    if failed:  # the grader's own cell: a bug here, not the student's
        raise RuntimeError(f"the grading preamble failed in the kernel: {failed[0]}")
    if stuck is not None and origin[stuck] is not None:
        stopped = stopped.replace(":", f" in cell {origin[stuck]}:", 1)
    first_error = next(((origin[i], error_text(o)) for i, cell in enumerate(cells)
                        if origin[i] is not None and i != stuck
                        for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
    raised = (f"; the notebook raised {first_error[1]} in cell {first_error[0]}" if first_error else "")
    rows = []
    for name in names:
        cell = cells[graded_at[name]]
        verdict = None
        for output in cell.get("outputs", []):
            for line in output.get("text", "").splitlines() if output.get("output_type") == "stream" else []:
                if line.startswith(RESULT_MARK):
                    verdict = json.loads(line[len(RESULT_MARK):])
        if verdict is None:
            reason = stopped or "its check did not run"
            where = f" (cell {origin[graded_at[name]]})" if origin[graded_at[name]] else ""
            if stuck != graded_at[name]:  # else the check itself ran out of time or crashed, with the student's code
                reason += f"; this exercise's check{where} never ran"
            rows.append(Row(student, chapter, name, False, f"{prefix}{reason}{raised}"))
        else:
            extra = raised if not verdict["passed"] else ""
            rows.append(Row(student, chapter, name, verdict["passed"], prefix + verdict["message"] + extra))
    return rows


# --------------------------------------------------------------------------------------------- a class
def grade_class(submissions: Path, time_limit: float = DEFAULT_TIME_LIMIT, fast: bool = True,
                chapters: list[str] | None = None, progress=print) -> list[Row]:
    """Every student's notebooks graded, and a row for every chapter a student did not hand in."""
    import nbformat

    from .exercises import chapter_exercises, chapters_with_exercises

    exercises = {number: chapter_exercises(number) for number in chapters_with_exercises()}
    files = chapter_files()
    students = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not students:
        raise MissingFileError(f"{submissions} has no student folders; put each student's notebooks in a folder "
                               "of their own, e.g. SUBMISSIONS/ada/05_sentence_order_prediction.ipynb")
    plan: dict[str, list[tuple[Path, str | None]]] = {}
    for student in students:
        plan[student.name] = []
        for path in sorted(student.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            try:
                notebook = nbformat.read(path, as_version=4)
                chapter = identify_chapter(notebook, path, exercises, files)
            except Exception:  # unreadable: graded by name below, where it gets its rows and the reason
                chapter = path.name[:2] if path.name[:2] in exercises else None
            plan[student.name].append((path, chapter))
    wanted = chapters or sorted({c for entries in plan.values() for _, c in entries if c})
    rows = []
    for student, entries in plan.items():
        handed_in = set()
        for path, chapter in entries:
            shown = path.relative_to(submissions / student)
            if chapter is None:
                rows.append(Row(student, "", "", False, f"{shown}: not a chapter notebook (no exercise of any "
                                                        "chapter found in it); not graded"))
                continue
            if chapters and chapter not in chapters:
                continue
            note = "" if path.name == files[chapter] else f"{shown} graded as {files[chapter]} (renamed)"
            if chapter in handed_in:
                note = f"{shown}: a second notebook for chapter {chapter}"
            handed_in.add(chapter)
            start = time.monotonic()
            graded = grade_notebook(path, student, chapter, time_limit, fast, note)
            progress(f"{student}/{shown}: {sum(r.passed for r in graded)} of {len(graded)} passed "
                     f"({time.monotonic() - start:.0f} s)")
            rows += graded
        for chapter in wanted:
            if chapter not in handed_in:
                rows += [Row(student, chapter, name, False, f"missing: no notebook for chapter {chapter} "
                                                            f"(expected {files[chapter]})")
                         for name in exercises[chapter]]
    return rows


def gradebook_text(rows: list[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(row.cells() for row in rows)
    return buffer.getvalue()

