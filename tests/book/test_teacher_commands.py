"""The teacher's commands as README and the teacher guide print them: every grading and hand-out command line is
found in those two files and run verbatim, from a folder laid out as a clone (the Makefile, .venv, chapters/ and
figures/ of this checkout), on a small class. A hand-out is built from what git holds, never from a teacher's
answers autosaved into a chapter."""

import csv
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from albert_mini.book import grade
from albert_mini.book.exercises import chapter_exercises
from albert_mini.book.exercises.solutions import solutions_path
from albert_mini.book.exercises.student import NOTES, STUB
from albert_mini.commands.exercises import main as hand_out

nbformat = pytest.importorskip("nbformat")
jupytext = pytest.importorskip("jupytext")
from handins import hand_in, worked_solutions  # noqa: E402 (needs jupytext and nbformat)

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "chapters" / "TEACHER_GUIDE.md"]
COMMAND = re.compile(r"^(make (grade|exercises|sandbox-deps)\b|(\.venv/bin/)?albert-mini (grade|exercises)\b)")
# Every such line the two files print, in the order a teacher runs them (a new one fails this test until added).
DOCUMENTED = [
    "make sandbox-deps",
    "make exercises",
    ".venv/bin/albert-mini exercises chapters/[0-9]*.py --out build/student --with-solutions",
    ".venv/bin/albert-mini exercises chapters/0[1-9]*.py --out ../course --nbgrader-source",
    "make grade",
    "make grade SUBMISSIONS=folder",
    "make grade SUBMISSIONS=class",
    'make grade SUBMISSIONS=class CHAPTERS="03 05" JOBS=2 TIME_LIMIT=300 MEMORY_LIMIT=4 GRADEBOOK=marks.csv',
    "albert-mini grade class",
]
needs_sandbox = pytest.mark.skipif(grade.sandbox_problem() is not None and not os.environ.get("CI"),
                                   reason="bubblewrap is not installed (make sandbox-deps); under CI=true this fails")


def documented_commands() -> set[str]:
    """The grading and hand-out command lines in README and the teacher guide: code-block lines (without their
    comments) and inline code spans (joined where the text wraps them)."""
    found = set()
    for document in DOCUMENTS:
        text = document.read_text()
        inside, prose = False, []
        for line in text.splitlines():
            if line.startswith("```"):
                inside = not inside
            elif inside:
                line = re.sub(r"\s+#.*$", "", line).strip()
                if COMMAND.match(line):
                    found.add(line)
            else:
                prose.append(line)
        prose = "\n".join(prose)
        for span in re.findall(r"`([^`]+)`", prose):
            span = " ".join(span.split())
            if COMMAND.match(span):
                found.add(span)
    return found


def test_the_documents_print_exactly_the_commands_run_below():
    assert documented_commands() == set(DOCUMENTED)


def solved(chapter: Path, answers: bool):
    """The chapter's exercise cells only (its demos would slow the class down), solved or untouched."""
    return hand_in(chapter, worked_solutions(chapter) if answers else {})


@pytest.mark.slow
@needs_sandbox
def test_every_documented_command_runs_as_typed(tmp_path):
    """From a clone-like folder: the hand-outs, then a class graded by each documented make and CLI line."""
    teacher = tmp_path / "albert-mini"
    teacher.mkdir()
    for name in ("Makefile", ".venv", "chapters", "figures", "data"):
        (teacher / name).symlink_to(ROOT / name)
    # The venv's prerequisites as copies no newer than its stamp, as in a clone after `make venv`: where the
    # checkout's pyproject.toml was edited since, `make` would otherwise reinstall the shared .venv from this
    # folder, which holds no package, and leave it unable to import albert_mini.
    stamp = ROOT / ".venv" / ".installed"
    installed = stamp.stat().st_mtime_ns
    for name in ("pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, teacher / name)
        os.utime(teacher / name, ns=(installed, installed))
    three = next((ROOT / "chapters").glob("03_*.py"))
    five = next((ROOT / "chapters").glob("05_*.py"))
    for student, chapters in {"ada": {three: True, five: True}, "ben": {three: False}}.items():
        (teacher / "class" / student).mkdir(parents=True)
        for chapter, answers in chapters.items():
            nbformat.write(solved(chapter, answers), teacher / "class" / student / chapter.with_suffix(".ipynb").name)
    (teacher / "folder" / "ada").mkdir(parents=True)
    shutil.copy(teacher / "class" / "ada" / three.with_suffix(".ipynb").name, teacher / "folder" / "ada")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ALBERT_MINI_", "MAKE", "MFLAGS"))}
    env.update(PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env['PATH']}")
    env.pop("CHAPTERS", None)

    def run(line: str) -> subprocess.CompletedProcess:
        return subprocess.run(line, shell=True, cwd=teacher, env=env, capture_output=True, text=True, timeout=900)

    done = {line: run(line) for line in DOCUMENTED}
    assert stamp.stat().st_mtime_ns == installed, "make reinstalled the checkout's .venv from the teacher's folder"
    for line, result in done.items():
        expected = 2 if line == "make grade" else 0
        assert result.returncode == expected, (line, result.stdout[-2000:], result.stderr[-2000:])
    ours = [line for line in done["make grade"].stderr.splitlines() if not line.startswith("make: ***")]
    assert len(ours) == 1 and ours[0].startswith("error: make grade needs the class folder: make grade SUBMISSIONS=")

    handout = teacher / "build" / "student" / "chapters"
    assert (handout / three.with_suffix(".ipynb").name).is_file() and (handout / NOTES).is_file()
    assert (handout / "solutions" / three.name).is_file()
    course = tmp_path / "course" / "source"
    assert (course / five.stem / five.with_suffix(".ipynb").name).is_file() and (course / five.stem / NOTES).is_file()

    def rows(path: Path) -> list[tuple[str, str, str, str]]:
        with path.open() as handle:
            return [(r["student"], r["chapter"], r["exercise"], r["passed"]) for r in csv.DictReader(handle)]

    three_names, five_names = list(chapter_exercises("03")), list(chapter_exercises("05"))
    everything = rows(teacher / "class" / "gradebook.csv")
    assert [r for r in everything if r[0] == "ada"] == (
        [("ada", "03", n, "yes") for n in three_names] + [("ada", "05", n, "yes") for n in five_names])
    assert [r for r in everything if r[0] == "ben"] == [("ben", "03", n, "no") for n in three_names]
    named = rows(teacher / "marks.csv")  # CHAPTERS="03 05": ben's missing chapter 05 gets its rows
    assert [r for r in named if r[0] == "ben"] == (
        [("ben", "03", n, "no") for n in three_names] + [("ben", "05", n, "no") for n in five_names])
    assert "--chapters 03 05" in done[DOCUMENTED[7]].stdout  # make echoed what it ran: the numbers, not files
    assert rows(teacher / "folder" / "gradebook.csv") == [("ada", "03", n, "yes") for n in three_names]
    feedback = teacher / "class" / "gradebook-feedback"  # one page per student, and no student of its own
    assert sorted(p.name for p in feedback.iterdir()) == ["ada.md", "ben.md"]
    ben = (feedback / "ben.md").read_text()
    assert ben.startswith("# Feedback for ben") and all(f"`{n}`: **not yet**" in ben for n in three_names)
    assert not [r for r in everything + named if r[0] == feedback.name]


def committed_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository holding chapter 3, its solutions and the reference notes, as a clone would."""
    repo = tmp_path / "clone"
    (repo / "chapters" / "solutions").mkdir(parents=True)
    chapter = repo / "chapters" / "03_factorized_embeddings.py"
    shutil.copy(ROOT / "chapters" / chapter.name, chapter)
    shutil.copy(solutions_path(ROOT / "chapters" / chapter.name), solutions_path(chapter))
    shutil.copy(ROOT / "chapters" / NOTES, repo / "chapters" / NOTES)
    shutil.copytree(ROOT / "figures", repo / "figures", ignore=lambda folder, names: [
        n for n in names if n.endswith(".png") and not n.startswith("factorized")])
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "chapters"], check=True)
    return repo, chapter


def test_a_handout_never_carries_answers_autosaved_into_a_chapter(tmp_path, capsys):
    repo, chapter = committed_copy(tmp_path)
    answer = "    return V * E + E * H + H  # the teacher's answer, typed in JupyterLab"
    edited = chapter.read_text().replace(f"    {STUB}", answer, 1)
    assert edited != chapter.read_text()
    chapter.write_text(edited)
    assert hand_out([str(chapter), "--out", str(tmp_path / "plain")]) == 0
    assert hand_out([str(chapter), "--out", str(tmp_path / "nbgrader"), "--nbgrader-source"]) == 0
    printed = capsys.readouterr().out
    assert printed.count(f"{chapter} differs from what git holds") == 2
    plain = (tmp_path / "plain" / "chapters" / chapter.with_suffix(".ipynb").name).read_text()
    assert "the teacher's answer" not in plain and STUB.replace('"', '\\"') in plain
    source = nbformat.read(tmp_path / "nbgrader" / "source" / chapter.stem / chapter.with_suffix(".ipynb").name, 4)
    stubs = [c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(stubs) == 3 and all("### BEGIN SOLUTION" in s and "def " in s for s in stubs)
    assert not any("the teacher's answer" in s for s in stubs)
    assert chapter.read_text() == edited  # the teacher's file is left as it is


def test_a_chapter_git_does_not_hold_is_refused_in_one_line(tmp_path, capsys):
    repo, chapter = committed_copy(tmp_path)
    new = chapter.with_name("03_my_version.py")
    shutil.copy(chapter, new)
    with pytest.raises(SystemExit) as stopped:
        hand_out([str(new), "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and str(new) in error and "not committed" in error
    assert not (tmp_path / "out" / "chapters").exists()


def test_the_handout_carries_the_reference_notes_the_chapters_link(tmp_path):
    chapters = [next((ROOT / "chapters").glob(f"{n}_*.py")) for n in ("03", "06")]
    assert hand_out([str(p) for p in chapters] + ["--out", str(tmp_path)]) == 0
    linking = (tmp_path / "chapters" / chapters[1].with_suffix(".ipynb").name).read_text()
    assert f"]({NOTES}" in linking
    assert (tmp_path / "chapters" / NOTES).read_bytes() == subprocess.run(
        ["git", "-C", str(ROOT), "show", f"HEAD:chapters/{NOTES}"], capture_output=True, check=True).stdout


def test_make_passes_chapter_numbers_not_chapter_files_to_grade():
    # --no-print-directory: under `make test` (MAKELEVEL set) make would print "Entering directory" first; -o: the
    # venv counts as installed, so a pyproject.toml edited since its stamp adds no install lines to the dry run
    options = ["make", "--no-print-directory", "-n", "-o", ".venv/.installed"]
    dry = subprocess.run([*options, "grade", "SUBMISSIONS=class", 'CHAPTERS=03 05'], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "--chapters 03 05" in " ".join(dry.split()) and "chapters/" not in dry
    plain = subprocess.run([*options, "grade", "SUBMISSIONS=class"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout
    assert "--chapters" not in plain
    assert shlex.split(plain.splitlines()[1].rstrip("\\"))[:3] == [".venv/bin/albert-mini", "grade", "class"]
