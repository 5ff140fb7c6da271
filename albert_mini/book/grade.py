"""Grade a class: run every submitted chapter notebook in a sandbox and judge its exercises outside it.

    albert-mini grade SUBMISSIONS                       # what `make grade SUBMISSIONS=...` runs
    albert-mini grade SUBMISSIONS --chapters 03 05 --jobs 2 --time-limit 300

SUBMISSIONS holds one folder per student with that student's notebooks (`05_sentence_order_prediction.ipynb`,
...). A hand-in is code that runs on the teacher's machine, so nothing the student's kernel says is a verdict:

- The grader draws each exercise's cases (the fixed traps and new ones from a fresh seed), computes the reference
  answers in its own process and leaves only the inputs beside the notebook. Where an exercise's check cell
  stands (its nbgrader `grade_id`, or its `check_<name>(...)` call; at the end if the student deleted it), the
  kernel calls the student's function on those inputs and writes what it returns as plain data. The grader
  reads that data back, validates its kind, and compares it with the reference. What the notebook prints, or
  does to the checks, is never read as a mark.
- On Linux each notebook runs in bubblewrap, in an empty root that holds only the system folders (read-only,
  without /etc's secrets), the Python installation, the venv, a copy of the package without the exercises'
  references, data/ (all read-only) and a scratch copy of the student's folder (the only writable folder and the
  only hand-in it can see): not the checkout, the class folder, the gradebook, home folders or anything else; no
  network (its own namespace), its own process namespace (everything it starts dies with it), no capabilities,
  a memory limit. Without bubblewrap,
  grading refuses unless --no-sandbox is given, and then every row says so.
- Each notebook's rows go to a journal beside the gradebook as it ends; the gradebook is written (atomically)
  once every notebook is graded. After a crash or Ctrl-C the same command continues from the journal.

The gradebook (default SUBMISSIONS/gradebook.csv) has the columns student, chapter, exercise, passed (yes/no),
message. A rerun replaces a gradebook this command wrote and nobody changed; another file is kept unless
--overwrite. A notebook that raises, crashes its kernel, runs out of time or memory, was renamed, is a second one
for a chapter, is hidden or a symbolic link still gets its rows, with the reason. "missing" rows are written only
for the chapters named with --chapters. Chapters run in fast mode (ALBERT_MINI_FAST=1) unless --full: the
checks do not depend on it.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path

from ..choices import DEFAULT_MEMORY_GB, DEFAULT_TIME_LIMIT
from ..errors import MissingFileError, UserError
from ..paths import repo_root
from .answering import ANSWERS, REQUESTS, requests_arrays_name
from .grade_bounds import Cgroup, Limits
from .grade_reading import (
    MAX_JSON_BYTES,
    Unreadable,
    array_file_bytes,
    capped,
    clean_report,
    parse_arrays,
    parse_json,
    printable,
    read_bundle,
    read_regular,
)

COLUMNS = ("student", "chapter", "exercise", "passed", "message")
KERNEL_TRIES = 3  # a kernel that fails to start is the machine's doing: try again before reporting it
GRADER_VERSION = 3  # part of every journal key: a change to how notebooks are judged regrades them
MAX_NOTEBOOK_BYTES = 50_000_000
SIDE_FILES_BYTES = 100_000_000  # what a notebook's folder may hold beside it for the sandbox's copy
SIDE_FILES_COUNT = 2000
NO_SANDBOX_NOTE = "graded without a sandbox (--no-sandbox)"
WITHOUT_SANDBOX = "without a sandbox (--no-sandbox): student code runs with your rights"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet would run such a cell (a student's folder name)
INSIDE = Path("/tmp/albert-mini-grading")  # where the scratch folder appears inside the sandbox
IO_ENV = "ALBERT_MINI_GRADING_IO"  # the folder of the grader's requests and the kernel's answers
RUNNER = "import sys; from albert_mini.book.grade_runner import main; sys.exit(main(sys.argv[1:]))"


class SandboxUnavailable(UserError):
    """No sandbox for student code on this machine (and --no-sandbox was not given)."""


@dataclass
class Row:
    """One gradebook line."""

    student: str
    chapter: str
    exercise: str
    passed: bool
    message: str

    def cells(self) -> list[str]:
        """The row's cells as a spreadsheet shows them: one line each, printable, the message capped."""
        message = re.sub(r"\.?[ \t]*\n\s*", "; ", self.message.strip())  # one line: a spreadsheet shows it whole
        message = re.sub(r"[ \t]+", " ", message)  # the checks align their lines with spaces
        cells = [printable(self.student), self.chapter, self.exercise, "yes" if self.passed else "no",
                 capped(printable(message))]
        return ["'" + cell if cell[:1] in FORMULA_STARTS else cell for cell in cells]


@dataclass
class Task:
    """One notebook to grade."""

    student: str
    path: Path
    shown: str  # its path inside the student's folder
    chapter: str
    note: str  # what the rows say about the file itself (renamed, one of two for a chapter)
    digest: str  # sha256 of the notebook's bytes

    def key(self, settings: dict) -> str:
        text = json.dumps([GRADER_VERSION, self.student, self.shown, self.chapter, self.note, self.digest, settings])
        return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------------------------- the class folder
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


def _read_notebook(path: Path):
    """The notebook in `path`: a regular file of at most MAX_NOTEBOOK_BYTES (its size checked before reading)."""
    import nbformat

    try:
        data = read_regular(path, MAX_NOTEBOOK_BYTES)
    except Unreadable as problem:
        raise ValueError(f"{problem}") from None
    return nbformat.reads(data.decode("utf-8"), as_version=4)


def _walk_student(folder: Path):
    """(path, problem) for every notebook and every link or hidden folder in a student's folder (no link followed)."""
    for current, dirs, files in os.walk(folder, followlinks=False):
        here = Path(current)
        for name in sorted(dirs):
            path = here / name
            if path.is_symlink():
                yield path, f"is a symbolic link (to {os.readlink(path)}); not graded: hand in files, not links"
            elif name == ".ipynb_checkpoints":
                continue  # JupyterLab's own autosaves
            elif name.startswith("."):
                yield path, "is a hidden folder; not graded (rename it without the leading dot to grade it)"
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (here / d).is_symlink())
        for name in sorted(files):
            path = here / name
            if not name.endswith(".ipynb"):
                continue
            if path.is_symlink():
                yield path, f"is a symbolic link (to {os.readlink(path)}); not graded: hand in the notebook itself"
            elif not stat.S_ISREG(os.lstat(path).st_mode):
                yield path, "is not a regular file (a FIFO, socket or device); not graded: hand in the notebook itself"
            elif name.startswith("."):
                yield path, "is a hidden file; not graded"
            else:
                yield path, None


def _chapter_notebooks(entry: Path, chapters: list[str] | None, exercises: dict, files: dict[str, str],
                       rows: list[Row]) -> dict[str, list[tuple[Path, str]]]:
    """A student folder's notebooks by chapter (path, as shown), of `chapters` if given; a row for each other file
    that needs one (unreadable, not a chapter's)."""
    found: dict[str, list[tuple[Path, str]]] = {}
    for path, problem in _walk_student(entry):
        shown = path.relative_to(entry).as_posix()
        if problem:
            rows.append(Row(entry.name, "", "", False, f"{shown} {problem}"))
            continue
        try:
            chapter = identify_chapter(_read_notebook(path), path, exercises, files)
        except Exception:  # unreadable: graded by name, where its rows say why
            chapter = path.name[:2] if path.name[:2] in exercises else None
        if chapter is None:
            rows.append(Row(entry.name, "", "", False, f"{shown}: not a chapter notebook (no exercise of any "
                                                       "chapter found in it); not graded"))
            continue
        if chapters and chapter not in chapters:
            continue
        found.setdefault(chapter, []).append((path, shown))
    return found


def _grading_tasks(entry: Path, found: dict[str, list[tuple[Path, str]]], files: dict[str, str]) -> list[Task]:
    """One task per notebook found, noting a renamed notebook and a chapter handed in more than once."""
    tasks = []
    for chapter, notebooks in sorted(found.items()):
        for path, shown in notebooks:
            notes = []
            if path.name != files[chapter]:
                notes.append(f"{shown} graded as {files[chapter]} (renamed)")
            if len(notebooks) > 1:
                others = ", ".join(s for _, s in notebooks if s != shown)
                notes.append(f"{shown} is one of {len(notebooks)} notebooks for chapter {chapter} (also: "
                             f"{others}); each is graded")
            try:
                digest = hashlib.sha256(read_regular(path, MAX_NOTEBOOK_BYTES)).hexdigest()
            except Unreadable as problem:  # too large, or replaced: the grader's reading says why in its rows
                digest = f"unreadable: {problem}"
            tasks.append(Task(entry.name, path, shown, chapter, "; ".join(notes), digest))
    return tasks


def plan_class(submissions: Path, chapters: list[str] | None = None) -> tuple[list[Task], list[Row]]:
    """The notebooks to grade, and the rows that need no run (links, hidden folders, missing chapters)."""
    from .exercises import chapter_exercises, chapters_with_exercises

    exercises = {number: chapter_exercises(number) for number in chapters_with_exercises()}
    files = chapter_files()
    tasks: list[Task] = []
    rows: list[Row] = []
    entries = sorted(submissions.iterdir())
    if not any(p.is_dir() for p in entries):
        raise MissingFileError(f"{submissions} has no student folders; put each student's notebooks in a folder "
                               "of their own, e.g. SUBMISSIONS/ada/05_sentence_order_prediction.ipynb")
    for entry in entries:
        if entry.is_symlink() and entry.is_dir():
            rows.append(Row(entry.name, "", "", False, f"the student folder is a symbolic link (to "
                                                       f"{os.readlink(entry)}); not graded: copy the notebooks "
                                                       "into a real folder"))
            continue
        if not entry.is_dir():
            continue  # the gradebook, its journal, a teacher's notes
        if entry.name.endswith(f"-{FEEDBACK_FOLDER}") and not any(entry.rglob("*.ipynb")):
            continue  # the feedback pages of an earlier run
        if entry.name.startswith("."):
            rows.append(Row(entry.name, "", "", False, "a hidden folder; not graded (a student folder's name must "
                                                       "not start with a dot)"))
            continue
        found = _chapter_notebooks(entry, chapters, exercises, files, rows)
        tasks += _grading_tasks(entry, found, files)
        for chapter in chapters or []:
            if chapter not in found:
                rows += [Row(entry.name, chapter, name, False, f"missing: no notebook for chapter {chapter} "
                                                               f"(expected {files[chapter]})")
                         for name in exercises[chapter]]
        if not found and not chapters:
            rows.append(Row(entry.name, "", "", False, "missing: no chapter notebook handed in"))
    return tasks, rows


# --------------------------------------------------------------------------------------------- the sandbox
def sandbox_problem() -> str | None:
    """Why no bubblewrap sandbox can run here (None when one can)."""
    if not sys.platform.startswith("linux"):
        return f"the grading sandbox needs Linux (bubblewrap); this is {sys.platform}"
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: sudo apt-get install bubblewrap)"
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
                            "--die-with-parent", "--size", "1048576", "--tmpfs", "/tmp", "true"],
                           capture_output=True, text=True, timeout=60)  # --size: bubblewrap 0.6 or later
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here ({probe.stderr.strip() or probe.returncode})"
    return None


def grading_package(target: Path) -> Path:
    """A copy of albert_mini without the exercises' references and cases (what the sandbox mounts read-only)."""
    source = Path(__file__).resolve().parents[1]
    package = target / "albert_mini"
    shutil.copytree(source, package, ignore=shutil.ignore_patterns("*.tmp"))
    exercises = package / "book" / "exercises"
    shutil.rmtree(exercises)
    exercises.mkdir()
    (exercises / "__init__.py").write_text(STUB_EXERCISES)
    return package


STUB_EXERCISES = '''"""Not available while grading: the exercises' checks and references belong to the grader."""

NOT_ATTEMPTED = "not attempted yet"


class ExerciseFailed(AssertionError):
    """Kept so that a notebook naming it still runs."""


def __getattr__(name):
    if name.startswith("check_"):
        def check(function):
            print(f"{name[len('check_'):]}: checked by the grader, not in this kernel")
            return False

        return check
    raise AttributeError(f"albert_mini.book.exercises.{name} is not available while grading")
'''


SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys"]  # what a kernel runs on
SECRETS = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
           "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd"]  # unreadable for the sandbox, even as root


def sandbox_command(scratch: Path, package: Path, limits: Limits) -> list[str]:
    """bubblewrap's arguments: an empty, read-only root holding only the system folders, the Python installation,
    the venv, the package copy and data/ (all read-only); the grader's inputs read-only; a scratch, /tmp and
    /dev/shm that are tmpfs of fixed sizes; and one writable file outside them, the runner's bundle."""
    root = repo_root()
    command = ["--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL", "--hostname", "grading"]
    for folder in SYSTEM:
        if os.path.islink(folder):  # merged /usr: /bin -> usr/bin
            command += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            command += ["--ro-bind", folder, folder]
    for secret in SECRETS:
        if os.path.isdir(secret) and not os.path.islink(secret):
            command += ["--tmpfs", secret]
        elif os.path.lexists(secret):
            command += ["--ro-bind", "/dev/null", secret]
    etc = scratch / "etc"  # who the teacher is, and which machine this is, are not the kernel's to read
    etc.mkdir(exist_ok=True)
    for name, text in host_files().items():
        (etc / name).write_text(text)
        command += ["--ro-bind", str(etc / name), f"/etc/{name}"]
    command += ["--dev", "/dev", "--size", str(limits.tmp_mb * 2**20), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
                "--proc", "/proc", "--size", str(limits.tmp_mb * 2**20), "--tmpfs", "/tmp"]
    base = Path(os.path.realpath(sys.base_prefix))  # the interpreter the venv links to (it may live under /root)
    for keep in [base, Path(sys.prefix), root / "data", root / "cache" / "polarity"]:
        if keep.is_dir() and not any(str(keep).startswith(s + "/") or str(keep) == s for s in SYSTEM):
            command += ["--ro-bind", str(keep), str(keep)]
    command += ["--ro-bind", str(package), str(root / "albert_mini"),
                "--size", str(limits.scratch_mb * 2**20), "--tmpfs", str(INSIDE),
                "--ro-bind", str(scratch / "in"), str(INSIDE / "in"),
                "--bind", str(scratch / "out.zip"), str(INSIDE / "out.zip"),
                "--remount-ro", "/", "--chdir", str(INSIDE),
                "--setenv", "HOME", str(INSIDE / "home"), "--setenv", "TMPDIR", str(INSIDE / "home")]
    return command


def host_files() -> dict[str, str]:
    """The /etc files that name the machine's users and the machine, as the sandbox sees them: only its own user."""
    uid, gid = os.getuid(), os.getgid()
    return {"passwd": f"student:x:{uid}:{gid}:student:{INSIDE / 'home'}:/bin/sh\n",
            "group": f"student:x:{gid}:\n", "hostname": "grading\n", "machine-id": "0" * 32 + "\n"}


def start_sandbox(options: list[str], command: list[str], **popen) -> subprocess.Popen:
    """bubblewrap running `command`, its options read from a pipe (`--args`), so that its command line, which a
    process in the sandbox can read, names none of the teacher's folders but the interpreter's."""
    read, write = os.pipe()
    try:
        with os.fdopen(write, "wb") as handle:
            handle.write(b"".join(os.fsencode(option) + b"\0" for option in options))
        return subprocess.Popen(["bwrap", "--args", str(read), "--", *command], pass_fds=(read,), **popen)
    finally:
        os.close(read)


# --------------------------------------------------------------------------------------------- one notebook
@dataclass
class Settings:
    time_limit: float = DEFAULT_TIME_LIMIT
    fast: bool = True
    sandbox: bool = True
    memory_gb: float = DEFAULT_MEMORY_GB
    threads: int = 1
    keep_runs: Path | None = None  # where each executed notebook is copied (the teacher's to read), if anywhere
    processes: int = Limits.processes
    scratch_mb: int = Limits.scratch_mb
    tmp_mb: int = Limits.tmp_mb

    def limits(self) -> Limits:
        return Limits(memory_gb=self.memory_gb, processes=self.processes, scratch_mb=self.scratch_mb,
                      tmp_mb=self.tmp_mb)

    def journal_view(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in ("threads", "keep_runs")}


def grading_cell(exercise: str) -> str:
    """The cell that stands in for an exercise's check cell: the kernel answers the grader's requests."""
    return (f"__import__('albert_mini.book.answering', fromlist=['answer_requests']).answer_requests("
            f"globals(), {exercise!r}, __import__('os').environ['{IO_ENV}']);")


def _run_notebook(notebook, exercises: list[str]) -> tuple[object, list[int | None], dict[str, int]]:
    """The notebook to run: check cells replaced by grading cells; the student's cell number of each cell."""
    import nbformat

    cells, origin, graded_at = [], [], {}
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "code":
            continue
        hit = check_cell_exercise(cell, {"": exercises})
        if hit and hit[1] not in graded_at:
            graded_at[hit[1]] = len(cells)
            cells.append(nbformat.v4.new_code_cell(grading_cell(hit[1])))
        else:
            cells.append(nbformat.v4.new_code_cell(cell.source))
        origin.append(number)
    for name in exercises:
        if name not in graded_at:
            graded_at[name] = len(cells)
            cells.append(nbformat.v4.new_code_cell(grading_cell(name)))
            origin.append(None)
    return nbformat.v4.new_notebook(cells=cells), origin, graded_at


def _copy_student_folder(source: Path, target: Path) -> list[str]:
    """The student's own folder for the sandbox: its folders and regular files only (no links, FIFOs or devices),
    within SIDE_FILES_BYTES and SIDE_FILES_COUNT (sizes checked before copying); a note for each file left out."""
    left, count, skipped = SIDE_FILES_BYTES, 0, []
    target.mkdir()
    for current, dirs, files in os.walk(source, followlinks=False):
        here = Path(current)
        there = target / here.relative_to(source)
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints" and not (here / d).is_symlink())
        for name in dirs:
            (there / name).mkdir()
        for name in sorted(files):
            path = here / name
            shown = printable(path.relative_to(source).as_posix())
            mode = os.lstat(path)
            if stat.S_ISLNK(mode.st_mode):
                continue  # reported with the student's rows when the class was planned
            if not stat.S_ISREG(mode.st_mode):
                skipped.append(f"{shown} (not a regular file)")
                continue
            if mode.st_size > left or count >= SIDE_FILES_COUNT:
                skipped.append(f"{shown} ({mode.st_size:,} bytes; a notebook's folder may hold "
                               f"{SIDE_FILES_BYTES:,} bytes in {SIDE_FILES_COUNT:,} files)")
                continue
            try:
                data = read_regular(path, left)
            except Unreadable as problem:
                skipped.append(f"{shown} ({problem})")
                continue
            (there / name).write_bytes(data)
            left -= len(data)
            count += 1
    return skipped


def _prepare(scratch: Path, task: Task, run, plans: dict, exercises: dict) -> list[str]:
    """The sandbox's inputs in scratch/in (the notebook to run, the requests, a copy of the student's folder) and
    its empty bundle; the notes on the folder's files left out."""
    import nbformat
    import numpy as np

    inputs = scratch / "in"
    inputs.mkdir()
    skipped = _copy_student_folder(task.path.parent, inputs / "work")
    nbformat.write(run, inputs / "run.ipynb")
    requests = {}
    for name, (_, request_list, request_arrays, _) in plans.items():
        requests[name] = {"requests": request_list, "unavailable": list(exercises[name].unavailable),
                          "keep_inputs": exercises[name].keep_inputs}
        np.savez(inputs / requests_arrays_name(name), **request_arrays)  # one file each: keys restart at q0
    (inputs / REQUESTS).write_text(json.dumps(requests))
    (scratch / "out.zip").touch()
    return skipped


class Grader:
    """Grades notebooks one by one or side by side; kills every sandbox it started when told to stop."""

    def __init__(self, settings: Settings, package: Path | None, say=print):
        self.settings, self.package, self.say = settings, package, say
        self.running: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()
        with self.lock:
            for process in list(self.running):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)

    def grade(self, task: Task) -> tuple[list[Row], float]:
        """The notebook's rows, however it fails; a failure of the grader's own code is one line naming the
        student and notebook, and rows that say so (not journaled: the same command grades it again)."""
        start = time.monotonic()
        try:
            rows = self._grade(task)
        except Exception as error:  # the grader's own bug, met on this notebook: the class goes on
            detail = capped(f"{type(error).__name__}: {error}", 300)
            self.say(printable(f"grading error on {task.student}/{task.shown}: {detail}"), file=sys.stderr,
                     flush=True)
            rows = [Row(task.student, task.chapter, name, False, f"grading error: the grader failed on this "
                                                                 f"notebook ({detail}); not the student's doing")
                    for name in self._exercise_names(task.chapter)]
        for row in rows:
            if not self.settings.sandbox:
                row.message = f"{row.message} [{NO_SANDBOX_NOTE}]"
            row.message = capped(row.message)
        return rows, time.monotonic() - start

    @staticmethod
    def _exercise_names(chapter: str) -> list[str]:
        from .exercises import chapter_exercises

        try:
            return list(chapter_exercises(chapter))
        except Exception:
            return [""]

    def _grade(self, task: Task) -> list[Row]:
        from .exercises import chapter_exercises

        exercises = chapter_exercises(task.chapter)
        prefix = f"{task.note}; " if task.note else ""
        try:
            notebook = _read_notebook(task.path)
        except Exception as error:  # not JSON, not a notebook: the student's file, reported in its rows
            return [Row(task.student, task.chapter, name, False, f"{prefix}{task.shown} could not be read as a "
                                                                  f"notebook ({type(error).__name__}: {error})")
                    for name in exercises]
        run, origin, graded_at = _run_notebook(notebook, list(exercises))
        plans = {}
        seed = secrets.randbits(63)  # drawn now: no table of known answers can cover the cases
        for name, exercise in exercises.items():
            cases = exercise.cases(seed)
            requests, arrays = exercise.requests(cases)
            plans[name] = (cases, requests, arrays, exercise.expected(requests, arrays))
        for attempt in range(1, KERNEL_TRIES + 1):
            with tempfile.TemporaryDirectory(prefix="albert-mini-grade-") as scratch:
                report, answers, skipped = self._execute(Path(scratch), task, run, plans, exercises)
            if report.get("status") != "kernel-start" or self.stopping.is_set():
                break
            time.sleep(2 * attempt)
        if skipped:
            prefix += f"not copied into the sandbox: {'; '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}; "
        return self._rows(task, exercises, plans, report, answers, origin, graded_at, prefix)

    def _execute(self, scratch: Path, task: Task, run, plans: dict, exercises: dict) -> tuple[dict, dict, list]:
        """Run the notebook (in the sandbox); its report, the answers it wrote (read as plain data, or the reason
        they could not be read) and the notes on files of its folder left out of the sandbox."""
        skipped = _prepare(scratch, task, run, plans, exercises)
        bundle = scratch / "out.zip"
        limits = self.settings.limits()
        inside = INSIDE if self.settings.sandbox else scratch
        runner = [sys.executable, "-c", RUNNER, str(inside / "in"), str(inside / "work"), str(inside / "io"),
                  str(inside / "out.zip"), str(self.settings.time_limit), "1" if self.settings.fast else "0",
                  str(limits.processes if self.settings.sandbox else 0), str(limits.bundle_mb * 2**20)]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "IPYTHON", "NBGRADER"))}
        threads = str(self.settings.threads)
        env.update({"ALBERT_MINI_FAST": "1" if self.settings.fast else "0", "MPLBACKEND": "Agg",
                    "PYDEVD_DISABLE_FILE_VALIDATION": "1", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
                    "HOME": str(inside / "home"), "JUPYTER_RUNTIME_DIR": str(inside / "home" / "runtime"),
                    "IPYTHONDIR": str(inside / "home" / "ipython"), "MPLCONFIGDIR": str(inside / "home" / "mpl"),
                    IO_ENV: str(inside / "io"), "PYTHONDONTWRITEBYTECODE": "1"})
        cgroup = Cgroup.make(limits, f"albert-mini-grade-{os.getpid()}-{secrets.token_hex(4)}") \
            if self.settings.sandbox else None

        def bounded():
            import resource

            if cgroup is not None:
                cgroup.enter()
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        with self.lock:
            if self.stopping.is_set():
                return {"status": "stopped"}, {}, skipped
            popen = {"env": env, "stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                     "stderr": subprocess.DEVNULL, "start_new_session": True, "preexec_fn": bounded}
            if self.settings.sandbox:
                process = start_sandbox(sandbox_command(scratch, self.package, limits), runner, **popen)
            else:
                process = subprocess.Popen(runner, **popen)
            self.running.add(process)
        killed = False
        try:
            process.communicate(timeout=self.settings.time_limit + 90)
        except subprocess.TimeoutExpired:
            killed = True
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # whatever the notebook left behind (no sandbox: best effort)
            if cgroup is not None:
                cgroup.remove()
            with self.lock:
                self.running.discard(process)
        report, files = self._collect(bundle, run, plans, task, killed, process.returncode)
        return report, {name: _read_answer(files, name) for name in plans}, skipped

    def _collect(self, bundle: Path, run, plans: dict, task: Task, killed: bool, returncode: int | None,
                 ) -> tuple[dict, dict]:
        """The run's report and the bundle's files (each read within its limit) once the sandbox has ended."""
        limits = self.settings.limits()
        kept = {"executed.ipynb": MAX_NOTEBOOK_BYTES} if self.settings.keep_runs else {}
        wanted = {"report.json": 1_000_000, **kept,
                  **{f"{ANSWERS}/{name}.json": MAX_JSON_BYTES for name in plans},
                  **{f"{ANSWERS}/{name}.npz": array_file_bytes() for name in plans}}
        try:
            files = read_bundle(bundle, limits.bundle_mb * 2**20, wanted)
        except Unreadable as problem:
            files = {"report.json": Unreadable(str(problem))}
        try:
            report = clean_report(parse_json(_member(files, "report.json")), len(run.cells))
        except Unreadable:
            report = {}
        if self.stopping.is_set():
            report = {"status": "stopped"}
        elif killed:
            report = {"status": "timeout", "cell": report.get("cell")}
        elif report.get("status") is None:  # the runner itself was killed: by the notebook, or for its memory
            report = {"status": "crashed", "detail": f"(the sandbox ended with exit status {returncode})"}
        if self.settings.keep_runs and isinstance(files.get("executed.ipynb"), bytes):
            target = self.settings.keep_runs / task.student / task.shown
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files["executed.ipynb"])
        return report, files

    def _rows(self, task: Task, exercises: dict, plans: dict, report: dict, answers: dict, origin: list,
              graded_at: dict, prefix: str) -> list[Row]:
        status, stuck = report.get("status"), report.get("cell")
        where = f" in cell {origin[stuck]}" if isinstance(stuck, int) and 0 <= stuck < len(origin) and origin[stuck] \
            else ""
        stopped = {
            "timeout": f"timed out{where}: the notebook ran past the time limit of {self.settings.time_limit:g} s",
            "crashed": f"crashed{where}: the kernel died (it exited, or ran out of its "
                       f"{self.settings.memory_gb:g} GB of memory) {report.get('detail', '')}".strip(),
            "kernel-start": f"grading error: the kernel did not start in {KERNEL_TRIES} tries "
                            f"({report.get('detail', '')}); not the student's doing: run the same command again",
            "stopped": "grading error: grading was interrupted before this notebook finished",
        }.get(status, "")
        errors = report.get("errors") if isinstance(report.get("errors"), list) else []
        first_error = next(((origin[i], str(text)[:300]) for i, text in errors  # the stuck cell's is told above
                            if isinstance(i, int) and 0 <= i < len(origin) and origin[i] is not None and i != stuck),
                           None)
        raised = f"; the notebook raised {explained(first_error[1])} in cell {first_error[0]}" if first_error else ""
        rows = []
        for name, exercise in exercises.items():
            cases, requests, arrays, expected = plans[name]
            answer = answers.get(name)
            if isinstance(answer, Unreadable) and str(answer) != "absent":
                rows.append(Row(task.student, task.chapter, name, False, f"{prefix}{name}: the answer files the "
                                                                         f"notebook left could not be read "
                                                                         f"({answer}){raised}"))
                continue
            if isinstance(answer, tuple):
                data, answer_arrays = answer
                try:
                    verdict = exercise.judge(cases, requests, expected, data, {**arrays, **answer_arrays})
                    passed, message = verdict.passed is True, verdict.message
                except Exception as error:  # an answer the judge cannot read is a wrong answer
                    passed, message = False, f"{name}: the answer could not be read ({type(error).__name__})"
                rows.append(Row(task.student, task.chapter, name, passed,
                                prefix + message + ("" if passed else raised)))
                continue
            reason = stopped or "its check did not run"
            cell = origin[graded_at[name]] if graded_at[name] < len(origin) else None
            if status in ("timeout", "crashed") and stuck == graded_at[name]:
                pass  # the student's function itself ran out of time or crashed the kernel
            elif status != "kernel-start":
                reason += f"; this exercise's check{f' (cell {cell})' if cell else ''} never ran"
            rows.append(Row(task.student, task.chapter, name, False, f"{prefix}{reason}{raised}"))
        return rows


def explained(error: str) -> str:
    """A notebook's error as the teacher reads it: an import of what the grader withholds says so."""
    if re.match(r"ModuleNotFoundError: No module named 'albert_mini\.book\.exercises\.", error):
        return (f"{error} (it imported the exercises' references or checks, which the grader withholds: it called "
                "the package's reference or changed the checks)")
    return error


def _member(files: dict[str, bytes | Unreadable], name: str) -> bytes:
    """A member of the runner's bundle, or Unreadable ("absent" when the bundle lacks it)."""
    found = files.get(name, Unreadable("absent"))
    if isinstance(found, Unreadable):
        raise found
    return found


def _read_answer(files: dict[str, bytes | Unreadable], name: str) -> tuple[dict, dict] | Unreadable:
    """One exercise's answer as the kernel wrote it (a JSON object and its arrays, from the runner's bundle), or
    why not: each parsed as grade_reading does (sizes, depth and array headers checked first)."""
    try:
        data = parse_json(_member(files, f"{ANSWERS}/{name}.json"))
    except Unreadable as problem:
        return problem if str(problem) == "absent" else Unreadable(f"{name}.json: {problem}")
    if not isinstance(data, dict):
        return Unreadable(f"{name}.json: not a JSON object")
    if set(data) == {"unreadable"}:  # the runner could not read it (a FIFO, a link, too large)
        return Unreadable(f"{name}.json: {str(data['unreadable'])[:200]}")
    try:
        arrays = parse_arrays(_member(files, f"{ANSWERS}/{name}.npz"))
    except Unreadable as problem:
        return Unreadable(f"{name}.npz: {problem}")
    return data, arrays


# --------------------------------------------------------------------------------------------- a class
class Journal:
    """The rows of every notebook graded so far, one JSON line each, kept beside the gradebook (path None: in
    memory only, for a caller that grades once and keeps nothing)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.done: dict[str, list[Row]] = {}
        self.lock = threading.Lock()
        if path is not None and path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                    self.done[entry["key"]] = [Row(**row) for row in entry["rows"]]
                except (ValueError, KeyError, TypeError):
                    continue  # a line torn by a kill: that notebook is graded again

    def add(self, key: str, rows: list[Row], seconds: float, shown: str) -> None:
        if self.path is not None:
            line = json.dumps({"key": key, "notebook": shown, "seconds": round(seconds, 1),
                               "rows": [asdict(row) for row in rows]})
            with self.lock, open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        self.done[key] = rows


def journal_path(gradebook: Path) -> Path:
    """The journal beside `gradebook`: `.NAME.journal.jsonl`, or `.NAME.journal-2.jsonl`, ... where that name is
    taken by something that is not a regular file (a student's folder in the class folder, say)."""
    for number in range(1, 100):
        path = gradebook.with_name(f".{gradebook.name}.journal{'' if number == 1 else f'-{number}'}.jsonl")
        if not os.path.lexists(path) or stat.S_ISREG(os.lstat(path).st_mode):
            return path
    raise UserError(f"no free name for the journal beside {gradebook}; give another --out")


def grade_class(submissions: Path, settings: Settings, chapters: list[str] | None = None, jobs: int = 1,
                journal: Journal | None = None, progress=print) -> list[Row]:
    """Every notebook of the class graded (continuing from `journal`), in the class's order."""
    tasks, rows = plan_class(submissions, chapters)
    journal = journal or Journal(None)
    view = settings.journal_view()
    results: dict[int, list[Row]] = {}
    todo = []
    for index, task in enumerate(tasks):
        kept = journal.done.get(task.key(view))
        if kept is not None:
            results[index] = kept
        else:
            todo.append(index)
    if todo:
        progress(f"grading {len(todo)} notebooks ({len(tasks) - len(todo)} already graded), {jobs} at a time"
                 f"{'' if settings.sandbox else ', ' + WITHOUT_SANDBOX}", flush=True)
    with contextlib.ExitStack() as stack:
        package = None
        if settings.sandbox and todo:
            package = grading_package(Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="albert-mini-"))))
        grader = Grader(settings, package)
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=jobs))
        pending = {pool.submit(grader.grade, tasks[index]): index for index in todo}
        try:
            while pending:
                finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = pending.pop(future)
                    task = tasks[index]
                    graded, seconds = future.result()
                    if grader.stopping.is_set():
                        continue
                    results[index] = graded
                    if not any(r.message.startswith("grading error") for r in graded):
                        journal.add(task.key(view), graded, seconds, f"{task.student}/{task.shown}")
                    progress(printable(f"{task.student}/{task.shown}: {sum(r.passed for r in graded)} of "
                                       f"{len(graded)} passed ({seconds:.0f} s"
                                       f"{'' if settings.sandbox else ', ' + WITHOUT_SANDBOX})"), flush=True)
        except BaseException:
            grader.stop()
            for future in pending:
                future.cancel()
            raise
    ordered = [row for index in sorted(results) for row in results[index]]
    return sorted(ordered + rows, key=lambda r: (r.student, r.chapter, r.exercise == ""))


FEEDBACK_FOLDER = "feedback"  # beside the gradebook: one Markdown file per student, to hand back


def feedback_folder(gradebook: Path) -> Path:
    return gradebook.with_name(f"{gradebook.stem}-{FEEDBACK_FOLDER}")


def feedback_texts(rows: list[Row]) -> dict[str, str]:
    """Student folder name -> a Markdown page of their rows (each exercise, passed or not, its message and hint),
    as nbgrader's generate_feedback gives a student."""
    pages: dict[str, list[str]] = {}
    for row in rows:
        lines = pages.setdefault(row.student, [f"# Feedback for {printable(row.student)}", ""])
        cells = row.cells()
        if row.exercise:
            lines.append(f"- chapter {row.chapter}, `{row.exercise}`: **{'passed' if row.passed else 'not yet'}**. "
                         f"{cells[4]}")
        else:
            lines.append(f"- {cells[4]}")
    return {student: "\n".join(lines) + "\n" for student, lines in pages.items()}


def gradebook_text(rows: list[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(row.cells() for row in rows)
    return buffer.getvalue()
