"""`make grade`: a class folder with a correct, a wrong, a crashing, a hanging and a renamed notebook gives one
gradebook row per notebook and exercise, with the right verdicts, within the time limit; bad input is one line."""

import csv
import time
from pathlib import Path

import pytest

from albert_mini.book import grade
from albert_mini.book.exercises.solutions import defined_function, solution_cells, solutions_path
from albert_mini.commands import grade as grade_command

jupytext = pytest.importorskip("jupytext")
nbformat = pytest.importorskip("nbformat")

CHAPTER = Path(__file__).resolve().parents[2] / "chapters" / "03_factorized_embeddings.py"  # cheap exercises
NAME = CHAPTER.with_suffix(".ipynb").name
EXERCISES = ["factorized_embedding_params", "break_even_embedding_size", "mlm_head_params"]
TIME_LIMIT = 20


def submission(answers: dict[str, str], after_first_check: str = "") -> "nbformat.NotebookNode":
    """Chapter 3's exercise cells as a student hands them in: stubs replaced by `answers`, plus one extra cell."""
    cells = []
    for cell in jupytext.read(CHAPTER).cells:
        grading = cell.metadata.get("nbgrader", {})
        if not grading and not (cell.cell_type == "markdown" and "### Exercise" in cell.source):
            continue  # the chapter's demos: not needed to grade, and they would slow the test down
        cell = nbformat.from_dict(dict(cell))
        if grading.get("solution") and grading["grade_id"] in answers:
            cell.source = answers[grading["grade_id"]]
        cells.append(cell)
        if after_first_check and grading.get("grade_id") == f"check_{EXERCISES[0]}":
            cells.append(nbformat.v4.new_code_cell(after_first_check))
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                          "display_name": "Python 3"}})


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    """Grade the five-student class once; (rows by (student, exercise), seconds, what it printed)."""
    solutions = {defined_function(c.source): c.source for c in solution_cells(solutions_path(CHAPTER))
                 if c.cell_type == "code" and defined_function(c.source)}
    wrong = {**solutions, EXERCISES[0]: "def factorized_embedding_params(V, E, H):\n    return V * E + E * H\n"}
    del wrong[EXERCISES[2]]  # left as the stub: not attempted yet
    folder = tmp_path_factory.mktemp("class")
    notebooks = {
        ("correct", NAME): submission(solutions),
        ("wrong", NAME): submission(wrong, after_first_check="1 / 0"),
        ("crashing", NAME): submission(solutions, after_first_check="import os\n\nos._exit(1)"),
        ("hanging", NAME): submission(solutions, after_first_check="import time\n\ntime.sleep(3600)"),
        ("renamed", "chapter three (1).ipynb"): submission(solutions),
    }
    for (student, name), notebook in notebooks.items():
        (folder / student).mkdir()
        nbformat.write(notebook, folder / student / name)
    printed = []
    start = time.monotonic()
    rows = grade.grade_class(folder, time_limit=TIME_LIMIT, progress=printed.append)
    seconds = time.monotonic() - start
    (folder / "gradebook.csv").write_text(grade.gradebook_text(rows))  # what `make grade` writes
    out = folder / "chapter-01.csv"
    argv = [str(folder), "--chapters", "01", "--time-limit", "5", "--out", str(out)]
    assert grade_command.main(argv) == 0  # none handed in
    with out.open() as handle:
        missing = list(csv.DictReader(handle))
    return {(r.student, r.exercise): r for r in rows}, seconds, printed, missing, folder / "gradebook.csv"


@pytest.mark.slow
def test_every_notebook_gets_one_row_per_exercise_with_the_right_verdict(gradebook):
    rows, _, printed, _, _ = gradebook
    students = ("correct", "wrong", "crashing", "hanging", "renamed")
    assert sorted(rows) == sorted((s, e) for s in students for e in EXERCISES)
    assert {r.chapter for r in rows.values()} == {"03"}
    verdicts = {student: [rows[student, e].passed for e in EXERCISES] for student in students}
    assert verdicts == {"correct": [True, True, True], "wrong": [False, True, False],
                        "crashing": [True, False, False], "hanging": [True, False, False],
                        "renamed": [True, True, True]}
    assert "Well done" in rows["correct", EXERCISES[0]].message
    wrong = rows["wrong", EXERCISES[0]].cells()[4]  # as the CSV holds it: one line, single spaces
    assert "\n" not in wrong and "input: 30000, 128, 768; expected: 3939072; got: 3938304; hint:" in wrong
    assert "ZeroDivisionError" in wrong  # the cell the student broke is named too
    assert "not attempted yet" in rows["wrong", EXERCISES[2]].message
    assert "crashed in cell" in rows["crashing", EXERCISES[1]].message
    assert f"time limit of {TIME_LIMIT} s" in rows["hanging", EXERCISES[2]].message
    assert "renamed" in rows["renamed", EXERCISES[0]].message and NAME in rows["renamed", EXERCISES[0]].message
    assert len(printed) == 5


@pytest.mark.slow
def test_the_class_is_graded_within_the_time_limits(gradebook):
    _, seconds, printed, _, _ = gradebook
    hanging = next(line for line in printed if line.startswith("hanging/"))
    assert int(hanging.rsplit("(", 1)[1].split(" ")[0]) <= TIME_LIMIT + 10  # stopped at its limit, not later
    assert seconds < TIME_LIMIT + 4 * 12  # the four others take seconds each


@pytest.mark.slow
def test_the_gradebook_csv_has_the_columns_and_a_row_for_a_chapter_not_handed_in(gradebook):
    _, _, _, missing, out = gradebook
    with out.open() as handle:
        written = list(csv.reader(handle))
    assert written[0] == ["student", "chapter", "exercise", "passed", "message"] and len(written) == 1 + 5 * 3
    assert [row[3] for row in written[1:]].count("yes") == 9
    assert len(missing) == 5 and {r["chapter"] for r in missing} == {"01"}
    assert all(r["passed"] == "no" and "missing: no notebook for chapter 01" in r["message"] for r in missing)


@pytest.mark.parametrize("argv, expected", [
    (lambda tmp: [str(tmp / "absent")], "is not a folder"),
    (lambda tmp: [str(tmp)], "has no student folders"),
    (lambda tmp: [str(tmp), "--chapters", "42"], "--chapters 42: no such chapter"),
    (lambda tmp: [str(tmp), "--time-limit", "0"], "--time-limit"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, capsys, argv, expected):
    with pytest.raises(SystemExit) as stop:
        grade_command.main(argv(tmp_path))
    error = capsys.readouterr().err
    assert stop.value.code == 2 and expected in error and error.count("\n") == 1


def test_an_existing_gradebook_is_not_overwritten_unless_asked(tmp_path, capsys):
    (tmp_path / "ada").mkdir()
    (tmp_path / "gradebook.csv").write_text("the teacher's own notes\n")
    with pytest.raises(SystemExit) as stop:
        grade_command.main([str(tmp_path)])
    assert stop.value.code == 2 and "--overwrite" in capsys.readouterr().err
    assert (tmp_path / "gradebook.csv").read_text() == "the teacher's own notes\n"


def test_an_unreadable_notebook_and_a_stray_file_get_their_rows_without_a_kernel(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "05_sentence_order_prediction.ipynb").write_text("{ not json")
    (tmp_path / "ada" / "shopping list.ipynb").write_text("{ not json either")
    rows = grade.grade_class(tmp_path, time_limit=5, progress=lambda line: None)
    assert [(r.chapter, r.exercise, r.passed) for r in rows] == [
        ("05", "sop_pair", False), ("05", "nsp_label_from_sources", False), ("05", "overlap_feature", False),
        ("", "", False)]
    assert all("could not be read as a notebook" in r.message for r in rows[:3])
    assert "shopping list.ipynb: not a chapter notebook" in rows[3].message


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_graded_kernel_reaches_no_network_but_this_machine(tmp_path):
    """The preamble every graded notebook runs first: names and addresses beyond the machine are refused."""
    import subprocess
    import sys

    probe = grade.PREAMBLE.replace("FIGURE_FOLDER", repr(str(tmp_path))) + '''
import socket
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(1)
socket.create_connection(server.getsockname(), timeout=5).close()  # this machine: allowed
for host in ("192.0.2.1", "pypi.org"):
    try:
        socket.create_connection((host, 443), timeout=5)
    except OSError as error:
        print(error)
import albert_mini.paths
print(albert_mini.paths.figure_path("x.png").parent)
'''
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "ALBERT_MINI_FAST": "0"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["no network while grading (refused 192.0.2.1)", "no network while grading (refused pypi.org)"]
    assert lines[2] == str(tmp_path)  # figures of a full-mode run stay out of the checkout
