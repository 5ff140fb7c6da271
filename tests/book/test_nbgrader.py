"""nbgrader as a teacher runs it: installed from PyPI in an environment of its own (no torch there), grading chapter
3 with the chapters' `albert-mini` kernel, which runs this environment's python.

The round trip: `albert-mini exercises --nbgrader-source`, then nbgrader's generate_assignment, autograde,
generate_feedback and export on a correct, a wrong and an untouched submission. nbgrader is not installed into
this environment (its server and JupyterLab extensions would change the JupyterLab that `make lab` gives learners);
the fixture installs it, pinned by constraints.txt, into a temporary virtual environment, as a teacher would.
"""

import copy
import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from albert_mini.book.exercises import NOT_ATTEMPTED
from albert_mini.book.exercises.student import solution_bodies
from albert_mini.book.lab import KERNEL_NAME, kernel_dir
from albert_mini.commands.exercises import main as hand_out

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "03_factorized_embeddings"
WITH_FIGURE = "05_sentence_order_prediction"  # its text shows ../figures/experiment_sentence_task.png
NBGRADER_STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"  # what generate_assignment leaves
EXERCISES = ("factorized_embedding_params", "break_even_embedding_size", "mlm_head_params")


def pinned(name: str) -> str:
    """`name==version` as constraints.txt pins it."""
    return next(line.strip() for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line.strip().lower().startswith(f"{name}=="))


@pytest.fixture(scope="module")
def nbgrader(tmp_path_factory):
    """A function running `nbgrader ARGS` in a course folder, from nbgrader's own environment."""
    env_dir = tmp_path_factory.mktemp("nbgrader-env")
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    python = env_dir / "bin" / "python"
    done = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "-c", ROOT / "constraints.txt", pinned("nbgrader")],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"pip could not install {pinned('nbgrader')} from PyPI: {done.stderr[-2000:]}"
    lacks_torch = subprocess.run([python, "-c", "import torch"], capture_output=True, timeout=120)
    assert lacks_torch.returncode != 0, "nbgrader's environment must not have torch: the kernel brings it"
    config = tmp_path_factory.mktemp("jupyter-config")  # no teacher's ~/.jupyter/nbgrader_config.py
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ALBERT_MINI_", "NBGRADER", "JUPYTER", "VIRTUAL_ENV"))}  # full mode, as by default
    env.update(PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}",  # nbgrader runs `alembic` from its PATH
               JUPYTER_CONFIG_DIR=str(config),
               JUPYTER_PATH=str(kernel_dir(sys.prefix).parents[1]))  # where it finds the albert-mini kernel

    def run(course: Path, *args: str) -> str:
        done = subprocess.run([env_dir / "bin" / "nbgrader", *args], cwd=course, env=env, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, f"nbgrader {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
        return done.stdout + done.stderr

    return run


def answer(release, bodies: dict[str, list[str]], wrong: bool = False):
    """The release with each stub answered by the solution's body (the first answer off by H when `wrong`)."""
    notebook = copy.deepcopy(release)
    for cell in notebook.cells:
        name = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and name in bodies:
            body = "    return V * E + E * H" if wrong and name == EXERCISES[0] else "\n".join(bodies[name])
            assert NBGRADER_STUB in cell.source, cell.source
            cell.source = cell.source.replace(NBGRADER_STUB, body)
    return notebook


def solution_cells(path: Path) -> dict[str, str]:
    notebook = nbformat.read(path, as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in notebook.cells
            if cell.metadata.get("nbgrader", {}).get("solution")}


def checkout_state() -> tuple[str, dict]:
    """`git status --porcelain` of the checkout, and every file under figures/ with its size and mtime (a figure
    rewritten with the same bytes changes no status, but its mtime)."""
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                            text=True, check=True, timeout=120).stdout
    figures = {p.relative_to(ROOT).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
               for p in sorted((ROOT / "figures").rglob("*")) if p.is_file()}
    return status, figures


@pytest.mark.slow  # installs nbgrader from PyPI and autogrades three notebooks: make test runs it
def test_nbgrader_round_trip_scores_chapter_3_and_writes_nothing_into_the_checkout(nbgrader, tmp_path):
    if not (kernel_dir(sys.prefix) / "kernel.json").is_file():
        pytest.fail(f"the {KERNEL_NAME} kernel is not installed in {sys.prefix}: run make venv")
    course = tmp_path / "course"
    before = checkout_state()
    assert hand_out([str(ROOT / "chapters" / f"{CHAPTER}.py"), str(ROOT / "chapters" / f"{WITH_FIGURE}.py"),
                     "--out", str(course), "--nbgrader-source"]) == 0
    # A published chapter put straight into source/: the markers around each stub's raise keep its signature.
    published = course / "source" / "published" / f"{CHAPTER}.ipynb"
    published.parent.mkdir()
    published.write_bytes((ROOT / "chapters" / f"{CHAPTER}.ipynb").read_bytes())
    (course / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "albert-mini"\n'
                                               "c.Execute.timeout = 600\n")
    for assignment in (CHAPTER, WITH_FIGURE, "published"):
        nbgrader(course, "generate_assignment", assignment)

    release = course / "release" / CHAPTER / f"{CHAPTER}.ipynb"
    bodies = solution_bodies(ROOT / "chapters" / "solutions" / f"{CHAPTER}.py")
    for path in (release, course / "release" / "published" / f"{CHAPTER}.ipynb"):
        stubs = solution_cells(path)
        assert sorted(stubs) == sorted(EXERCISES), path
        for name, source in stubs.items():
            assert source.startswith(f"def {name}(") and '"""' in source and NBGRADER_STUB in source, source
            assert "BEGIN SOLUTION" not in source
            assert not [line for line in bodies[name] if line.strip() in source], "an answer was released"
    shown = nbformat.read(course / "release" / WITH_FIGURE / f"{WITH_FIGURE}.ipynb", as_version=4)
    cell = next(c for c in shown.cells if "](attachment:experiment_sentence_task.png)" in c.source)
    assert cell.attachments["experiment_sentence_task.png"]["image/png"]  # the release shows the figure
    assert not any("../figures/" in c.source for c in shown.cells)

    released = nbformat.read(release, as_version=4)
    assert released.metadata.kernelspec.name == KERNEL_NAME
    for student, notebook in (("right", answer(released, bodies)), ("wrong", answer(released, bodies, wrong=True)),
                              ("untouched", released)):
        folder = course / "submitted" / student / CHAPTER
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{CHAPTER}.ipynb")
    nbgrader(course, "autograde", CHAPTER)
    nbgrader(course, "generate_feedback", CHAPTER)
    nbgrader(course, "export")

    with open(course / "grades.csv", newline="") as f:
        scores = {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(f)
                  if row["assignment"] == CHAPTER}
    assert scores == {"right": (3.0, 3.0), "wrong": (2.0, 3.0), "untouched": (0.0, 3.0)}
    feedback = {student: (course / "feedback" / student / CHAPTER / f"{CHAPTER}.html").read_text()
                for student in scores}
    assert len(re.findall(r"all \d+ cases agree with the reference", feedback["right"])) == 3
    assert "ExerciseFailed" in feedback["wrong"] and f"{EXERCISES[0]}: case" in feedback["wrong"]
    assert feedback["untouched"].count(NOT_ATTEMPTED) >= 3
    status, figures = checkout_state()
    assert figures == before[1], "the round trip wrote into figures/"
    changed = sorted(set(status.splitlines()) ^ set(before[0].splitlines()))
    assert changed == [], f"the round trip changed the checkout's git status: {changed}"
