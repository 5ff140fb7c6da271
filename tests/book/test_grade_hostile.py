"""A class of hand-ins that attack the grader itself (tests/book/hostile_class.py: its answer files, its report,
special files and names in the class folder, its memory, the sandbox's bounds), graded in one run: every one
gets its rows with the reason, the honest classmate graded after them all gets full marks, a gradebook is
written, and the grader's own memory stays bounded."""

import os
import re

import pytest
from hostile_class import CASES, FIRST, HONEST, grade_and_measure, write_class

from albert_mini.book import grade
from albert_mini.book.grade_reading import MESSAGE_LIMIT

needs_sandbox = pytest.mark.skipif(grade.sandbox_problem() is not None and not os.environ.get("CI"),
                                   reason="bubblewrap is not installed (make sandbox-deps); under CI=true this fails")
GRADER_MEMORY = 1_000_000_000  # bytes; the 60-byte sub-layer answer alone once took the grader to 1.7 GB
SCRATCH_MB, TMP_MB, PROCESSES = 200, 100, 64  # each under what the attacks try (1 GB, 300 processes)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    write_class(folder)
    result = grade_and_measure(folder, timeout=3600, extra=["--scratch-limit", str(SCRATCH_MB), "--tmp-limit",
                                                            str(TMP_MB), "--process-limit", str(PROCESSES)])
    rows = result["rows"] or []
    result["by"] = {}
    for row in rows:
        result["by"].setdefault(row["student"], []).append(row)
    return result


def marks(hostile, student: str) -> str:
    return "".join(r["passed"][0] for r in hostile["by"][student] if r["exercise"])


def said(hostile, student: str) -> str:
    return " | ".join(r["message"] for r in hostile["by"][student])


pytestmark = [pytest.mark.slow, needs_sandbox]


def test_the_class_is_graded_and_the_gradebook_written(hostile):
    assert hostile["status"] == 0, hostile["stderr"][-3000:]
    assert hostile["rows"] is not None
    assert marks(hostile, HONEST) == "yyy"
    assert hostile["peak"] < GRADER_MEMORY, hostile["peak"]


@pytest.mark.parametrize("student, reason", [
    ("deep_json", "nested too deep"),
    ("broken_zip", "not an .npz"),
    ("npz_claims_1e13", "10,000,000,000,000 numbers"),
    ("npy_as_npz", "not an .npz"),
    ("sublayer_answer", "not plain data"),
    ("void_dtype", "not plain data"),
    ("answer_is_a_fifo", "not a regular file"),
    ("answer_overrides_inputs", "not one of the answer's"),
])
def test_rewritten_answer_files_cost_that_answer_only(hostile, student, reason):
    assert marks(hostile, student) == "nyy"
    first = next(r for r in hostile["by"][student] if r["exercise"] == FIRST)
    assert reason in first["message"], first["message"]


def test_a_rewritten_report_changes_no_mark(hostile):
    assert marks(hostile, "report_rewritten") == "yyy"


def test_special_files_and_names_get_rows_with_their_reason(hostile):
    assert "is not a regular file" in said(hostile, "fifo_named_like_the_notebook")
    assert marks(hostile, "fifo_beside_the_notebook") == "yyy"
    assert "not copied into the sandbox: pipe (not a regular file)" in said(hostile, "fifo_beside_the_notebook")
    assert marks(hostile, "sparse_side_file") == "yyy"
    assert "data.bin (2,147,483,648 bytes" in said(hostile, "sparse_side_file")
    assert marks(hostile, "sparse_notebook") == "nnn"
    assert "3,221,225,472 bytes, over the limit" in said(hostile, "sparse_notebook")
    assert marks(hostile, "non_utf8_caf\\xe9") == "yyy"  # the name as a spreadsheet shows it
    assert marks(hostile, "'=formula\\nwith a newline\\x07") == "yyy"
    assert "hidden folder" in said(hostile, ".gradebook.csv.journal.jsonl")
    assert not any(r["exercise"] for r in hostile["by"][".gradebook.csv.journal.jsonl"])


def test_a_message_is_capped_and_says_so(hostile):
    first = next(r for r in hostile["by"]["long_message"] if r["exercise"] == FIRST)
    assert first["passed"] == "no" and "ValueError" in first["message"]
    assert len(first["message"]) <= MESSAGE_LIMIT and "[cut: " in first["message"]


def test_every_hostile_student_has_rows(hostile):
    shown = {name.decode("utf-8", "backslashreplace") if isinstance(name, bytes) else name for name in CASES}
    shown = {"'=formula\\nwith a newline\\x07" if name.startswith("=") else name for name in shown}
    assert shown <= set(hostile["by"]), shown - set(hostile["by"])


@pytest.mark.parametrize("student, limit", [("fills_the_disk", SCRATCH_MB), ("fills_tmp", TMP_MB),
                                            ("fills_dev_shm", TMP_MB)])
def test_the_scratch_tmp_and_shm_hold_no_more_than_their_size(hostile, student, limit):
    written = int(re.search(r"MEASURE \S+ (\d+) MB written", hostile["measured"][student]).group(1))
    assert 0 < written <= limit, hostile["measured"][student]
    assert marks(hostile, student) == "yyy"  # the notebook went on: a full disk is an OSError, not a crash


def test_the_process_limit_holds(hostile):
    started = int(re.search(r"MEASURE (\d+) processes started", hostile["measured"]["many_processes"]).group(1))
    assert 0 < started < PROCESSES, hostile["measured"]["many_processes"]
