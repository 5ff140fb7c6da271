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

COLUMNS = ("student", "chapter", "exercise", "passed", "message")
KERNEL_TRIES = 3  # a kernel that fails to start is the machine's doing: try again before reporting it
GRADER_VERSION = 2  # part of every journal key: a change to how notebooks are judged regrades them
MAX_NOTEBOOK_BYTES = 50_000_000
MAX_ANSWER_BYTES = 200_000_000
NO_SANDBOX_NOTE = "graded without a sandbox (--no-sandbox)"
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
        message = re.sub(r"\.?[ \t]*\n\s*", "; ", self.message.strip())  # one line: a spreadsheet shows it whole
        message = re.sub(r"[ \t]+", " ", message)  # the checks align their lines with spaces
        cells = [self.student, self.chapter, self.exercise, "yes" if self.passed else "no", message]
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
    import nbformat

    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"larger than {MAX_NOTEBOOK_BYTES // 1_000_000} MB")
    return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)


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
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
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
                            "--die-with-parent", "true"], capture_output=True, text=True, timeout=60)
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


def sandbox_command(scratch: Path, package: Path) -> list[str]:
    """bubblewrap's arguments: an empty, read-only root holding only the system folders, the Python installation,
    the venv, the package copy and data/ (all read-only), a private /tmp and the scratch folder (writable); nothing
    else of the machine."""
    root = repo_root()
    command = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
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
    command += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    base = Path(os.path.realpath(sys.base_prefix))  # the interpreter the venv links to (it may live under /root)
    for keep in [base, Path(sys.prefix), root / "data", root / "cache" / "polarity"]:
        if keep.is_dir() and not any(str(keep).startswith(s + "/") or str(keep) == s for s in SYSTEM):
            command += ["--ro-bind", str(keep), str(keep)]
    command += ["--ro-bind", str(package), str(root / "albert_mini"),
                "--bind", str(scratch), str(INSIDE), "--remount-ro", "/", "--chdir", str(INSIDE / "work"),
                "--setenv", "HOME", str(INSIDE / "home"), "--setenv", "TMPDIR", str(INSIDE / "home")]
    return command


# --------------------------------------------------------------------------------------------- one notebook
@dataclass
class Settings:
    time_limit: float = DEFAULT_TIME_LIMIT
    fast: bool = True
    sandbox: bool = True
    memory_gb: float = DEFAULT_MEMORY_GB
    threads: int = 1
    keep_runs: Path | None = None  # where each executed notebook is copied (the teacher's to read), if anywhere

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


def _copy_student_folder(source: Path, target: Path) -> None:
    """The student's own folder, without links (they were reported) and without other students' anything."""
    def ignore(folder, names):
        return [n for n in names if os.path.islink(os.path.join(folder, n)) or n == ".ipynb_checkpoints"]

    shutil.copytree(source, target, ignore=ignore, symlinks=True)


class Grader:
    """Grades notebooks one by one or side by side; kills every sandbox it started when told to stop."""

    def __init__(self, settings: Settings, package: Path | None):
        self.settings, self.package = settings, package
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
        start = time.monotonic()
        rows = self._grade(task)
        if not self.settings.sandbox:
            for row in rows:
                row.message = f"{row.message} [{NO_SANDBOX_NOTE}]"
        return rows, time.monotonic() - start

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
                report, answers = self._execute(Path(scratch), task, run, plans, exercises)
            if report.get("status") != "kernel-start" or self.stopping.is_set():
                break
            time.sleep(2 * attempt)
        return self._rows(task, exercises, plans, report, answers, origin, graded_at, prefix)

    def _execute(self, scratch: Path, task: Task, run, plans: dict, exercises: dict) -> tuple[dict, dict]:
        """Run the notebook (in the sandbox); its report and the answers it wrote, read as plain data."""
        import nbformat
        import numpy as np

        io_dir, home = scratch / "io", scratch / "home"
        io_dir.mkdir()
        home.mkdir()
        _copy_student_folder(task.path.parent, scratch / "work")
        nbformat.write(run, io_dir / "run.ipynb")
        requests = {}
        for name, (_, request_list, request_arrays, _) in plans.items():
            requests[name] = {"requests": request_list, "unavailable": list(exercises[name].unavailable),
                              "keep_inputs": exercises[name].keep_inputs}
            np.savez(io_dir / requests_arrays_name(name), **request_arrays)  # one file each: keys restart at q0
        (io_dir / REQUESTS).write_text(json.dumps(requests))
        inside = INSIDE if self.settings.sandbox else scratch
        runner = [sys.executable, "-c", RUNNER, str(inside / "io"), str(inside / "work"),
                  str(self.settings.time_limit), "1" if self.settings.fast else "0"]
        if self.settings.sandbox:
            command = sandbox_command(scratch, self.package) + runner
        else:
            command = runner
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "IPYTHON", "NBGRADER"))}
        threads = str(self.settings.threads)
        env.update({"ALBERT_MINI_FAST": "1" if self.settings.fast else "0", "MPLBACKEND": "Agg",
                    "PYDEVD_DISABLE_FILE_VALIDATION": "1", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
                    "HOME": str(inside / "home"), "JUPYTER_RUNTIME_DIR": str(inside / "home" / "runtime"),
                    "IPYTHONDIR": str(inside / "home" / "ipython"), "MPLCONFIGDIR": str(inside / "home" / "mpl"),
                    IO_ENV: str(inside / "io"), "PYTHONDONTWRITEBYTECODE": "1"})
        limit = int(self.settings.memory_gb * 2**30)

        def limits():
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        with self.lock:
            if self.stopping.is_set():
                return {"status": "stopped"}, {}
            process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=limits)
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
            with self.lock:
                self.running.discard(process)
        report = _read_json(io_dir / "report.json", 1_000_000)
        if self.stopping.is_set():
            report = {"status": "stopped"}
        elif killed:
            report = {"status": "timeout", "cell": report.get("cell")}
        elif report.get("status") is None:  # the runner itself was killed: by the notebook, or for its memory
            report = {"status": "crashed", "detail": f"(the sandbox ended with exit status {process.returncode})"}
        executed = io_dir / "executed.ipynb"
        if self.settings.keep_runs and executed.is_file() and not executed.is_symlink():
            target = self.settings.keep_runs / task.student / task.shown
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(executed, target)
        answers = {}
        for name in plans:
            data = _read_json(io_dir / ANSWERS / f"{name}.json", MAX_ANSWER_BYTES)
            if data:
                answers[name] = (data, _read_arrays(io_dir / ANSWERS / f"{name}.npz"))
        return report, answers

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
        raised = f"; the notebook raised {first_error[1]} in cell {first_error[0]}" if first_error else ""
        rows = []
        for name, exercise in exercises.items():
            cases, requests, arrays, expected = plans[name]
            if name in answers:
                data, answer_arrays = answers[name]
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


def _read_json(path: Path, limit: int) -> dict:
    """A JSON object the sandbox wrote ({} when absent, too large, a link or not an object)."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > limit:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_arrays(path: Path) -> dict:
    import numpy as np

    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_ANSWER_BYTES:
            return {}
        with np.load(path, allow_pickle=False) as loaded:
            return {key: loaded[key] for key in loaded.files}
    except (OSError, ValueError, EOFError):
        return {}


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
    return gradebook.with_name(f".{gradebook.name}.journal.jsonl")


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
        progress(f"grading {len(todo)} notebooks ({len(tasks) - len(todo)} already graded), {jobs} at a time",
                 flush=True)
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
                    progress(f"{task.student}/{task.shown}: {sum(r.passed for r in graded)} of {len(graded)} "
                             f"passed ({seconds:.0f} s)", flush=True)
        except BaseException:
            grader.stop()
            for future in pending:
                future.cancel()
            raise
    ordered = [row for index in sorted(results) for row in results[index]]
    return sorted(ordered + rows, key=lambda r: (r.student, r.chapter, r.exercise == ""))


def gradebook_text(rows: list[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(row.cells() for row in rows)
    return buffer.getvalue()
