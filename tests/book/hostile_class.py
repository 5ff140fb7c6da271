"""A class of hand-ins that attack the grader itself, not the marks: its answer files, its report, its folders and
names, its memory and the sandbox's bounds. Each builds one student's folder of chapter-3 work (its three cheap
exercises); `write_class` puts every one in a class folder beside an honest classmate who sorts after them all.

    python tests/book/hostile_class.py CLASS [--one-by-one]    # measure: marks, gradebook, grader memory

(HOSTILE_GRADER_ROOT=/path/to/another/checkout grades with that checkout's code: a measurement before a change.)

Used by tests/book/test_grade_hostile.py; run as a script it grades the class (or each case in a class of its
own, beside the honest classmate) and prints, per case, the exit status, the student's marks, whether the
classmate was graded and the grader's peak memory (VmHWM of the grading process alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from handins import hand_in, worked_solutions

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "chapters" / "03_factorized_embeddings.py"
NAME = CHAPTER.with_suffix(".ipynb").name
FIRST = "factorized_embedding_params"
HONEST = "zz_honest"  # sorts after every hostile student: graded only if the grader survived them
SANDBOX_SIZE = 2**30  # the disk and tmpfs attacks write more than a bounded sandbox allows, less than a disk holds


def notebook(after_first_check: str = "", answers: dict[str, str] | None = None):
    """Chapter 3's exercise cells, solved, with `after_first_check` run right after the first check cell."""
    answers = worked_solutions(CHAPTER) if answers is None else answers
    after = {f"check_{FIRST}": after_first_check} if after_first_check else None
    return hand_in(CHAPTER, answers, after=after)


def rewrite(files: str) -> str:
    """A cell that replaces the first exercise's answer files (written by its grading cell) with `files`."""
    return ("import os, pathlib\nio = pathlib.Path(os.environ['ALBERT_MINI_GRADING_IO']) / 'answers'\n" + files)


def records(value: str, count: int = 13) -> str:
    """An answers .json whose every record holds `value` (a JSON text)."""
    return '{"records": [' + ", ".join([f'{{"value": {value}}}'] * count) + "]}"


NPZ_CLAIMING_1E13 = (  # a zip holding v0.npy whose header claims 10^13 float64 and holds 8 bytes
    "import zipfile\n"
    "header = b\"{'descr': '<f8', 'fortran_order': False, 'shape': (10000000000000,), }\"\n"
    "header += b' ' * (63 - len(header) % 64) + b'\\n'\n"
    "npy = b'\\x93NUMPY\\x01\\x00' + len(header).to_bytes(2, 'little') + header + b'\\0' * 8\n"
    "with zipfile.ZipFile(io / 'factorized_embedding_params.npz', 'w') as z:\n"
    "    z.writestr('v0.npy', npy)\n"
    f"(io / 'factorized_embedding_params.json').write_text({records(json.dumps({'ndarray': 'v0'}))!r})\n")

def fill(path: str) -> str:
    """A cell writing a little more than SANDBOX_SIZE to `path`, printing how much it wrote (then freeing it, so
    that the notebook's later answers find room)."""
    return (f"written = 0\ntry:\n    with open({path!r}, 'wb') as f:\n"
            f"        for _ in range({SANDBOX_SIZE // 2**20 + 64}):\n            f.write(b'x' * 2**20)\n"
            "            written += 1\nexcept OSError as error:\n    print(type(error).__name__)\n"
            f"print('MEASURE', {path!r}, written, 'MB written')\nimport os\nos.remove({path!r})\n")


CASES: dict[str, dict] = {
    # the answer files, rewritten after the grading cell wrote them
    "deep_json": {"cell": rewrite(
        "(io / 'factorized_embedding_params.json').write_text('[' * 100000 + ']' * 100000)\n")},
    "broken_zip": {"cell": rewrite("(io / 'factorized_embedding_params.npz').write_bytes(b'PK\\x03\\x04broken')\n")},
    "npz_claims_1e13": {"cell": rewrite(NPZ_CLAIMING_1E13)},
    "npy_as_npz": {"cell": rewrite("import numpy as np\nwith open(io / 'factorized_embedding_params.npz', 'wb') as f:\n"
                                   "    np.save(f, np.zeros(3))\n")},
    "sublayer_answer": {"cell": rewrite(f"(io / 'factorized_embedding_params.json').write_text("
                                        f"{records(json.dumps({'sublayer': ['ffn', 8000, 1]}))!r})\n")},
    "void_dtype": {"cell": rewrite(f"(io / 'factorized_embedding_params.json').write_text("
                                   f"{records(json.dumps({'numpy': 'V2000000000', 'value': {'int': 0}}))!r})\n")},
    "answer_is_a_fifo": {"cell": rewrite("os.unlink(io / 'factorized_embedding_params.json')\n"
                                         "os.mkfifo(io / 'factorized_embedding_params.json')\n")},
    "answer_overrides_inputs": {"cell": rewrite(
        "import numpy as np\nnp.savez(io / 'factorized_embedding_params.npz', q0=np.zeros((3, 3)))\n")},
    # the report, rewritten by a process left running after the notebook's last cell
    "report_rewritten": {"cell": (
        "import os, subprocess, sys\nreport = os.path.join(os.environ['ALBERT_MINI_GRADING_IO'], 'report.json')\n"
        "code = ('import time, sys\\nbodies = [\\'{\"status\": [1], \"cell\": {}, \"errors\": [[1, 2, 3], 5]}\\', '\n"
        "        '\\'[\\' * 100000 + \\']\\' * 100000]\\nfor i in range(200000):\\n'\n"
        "        '    open(sys.argv[1], \"w\").write(bodies[i % 2]); time.sleep(0.001)\\n')\n"
        "subprocess.Popen([sys.executable, '-c', code, report], start_new_session=True)\n")},
    # special files and names in the class folder
    "fifo_named_like_the_notebook": {"fifo": NAME, "no_notebook": True},
    "fifo_beside_the_notebook": {"fifo": "pipe"},
    "sparse_side_file": {"sparse": ("data.bin", 2 * 2**30)},
    "sparse_notebook": {"sparse": (NAME, 3 * 2**30), "no_notebook": True},
    b"non_utf8_caf\xe9": {},
    "=formula\nwith a newline\x07": {},
    ".gradebook.csv.journal.jsonl": {},  # a folder named like the grader's journal
    # messages and bounds
    "long_message": {"answers": {
        FIRST: "def factorized_embedding_params(V, E, H):\n    raise ValueError('x' * 5_000_000)\n"}},
    "fills_the_disk": {"cell": fill("big.bin")},
    "fills_tmp": {"cell": fill("/tmp/big.bin")},
    "fills_dev_shm": {"cell": fill("/dev/shm/big.bin")},
    "many_processes": {"cell": "import subprocess\nkept = []\nfor _ in range(300):\n    try:\n"
                               "        kept.append(subprocess.Popen(['sleep', '30']))\n"
                               "    except OSError:\n        break\n"
                               "print('MEASURE', len(kept), 'processes started')\nimport time\ntime.sleep(5)\n"},
}


def write_class(folder: Path, cases: list | None = None) -> None:
    """The hostile students of `cases` (all when None) and the honest classmate, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in (CASES if cases is None else cases):
        case = CASES[name]
        student = os.path.join(os.fsencode(folder), name if isinstance(name, bytes) else os.fsencode(name))
        os.makedirs(student, exist_ok=True)
        student = Path(os.fsdecode(student))
        if not case.get("no_notebook"):
            answers = {**worked_solutions(CHAPTER), **case.get("answers", {})}
            nbformat.write(notebook(case.get("cell", ""), answers), student / NAME)
        if "fifo" in case:
            os.mkfifo(student / case["fifo"])
        if "sparse" in case:
            file, size = case["sparse"]
            with open(student / file, "wb") as handle:
                handle.truncate(size)
    (folder / HONEST).mkdir(exist_ok=True)
    nbformat.write(notebook(), folder / HONEST / NAME)


def peak_memory(pid: int) -> int:
    """VmHWM of one process, in bytes (0 once it has ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def grade_and_measure(folder: Path, timeout: float, extra: list[str] = ()) -> dict:
    """Grade `folder`; the exit status, the gradebook's rows (None if none was written), the grader's peak memory."""
    runs = Path(tempfile.mkdtemp()) / "runs"
    command = [sys.executable, "-m", "albert_mini", "grade", os.fsdecode(folder), "--jobs", "2", "--time-limit", "120",
               "--keep-runs", str(runs), *extra]
    start = time.monotonic()
    grader = Path(os.environ.get("HOSTILE_GRADER_ROOT", ROOT))  # another checkout's grader (its code before a change)
    env = {**os.environ, "PYTHONPATH": str(grader)} if grader != ROOT else None
    process = subprocess.Popen(command, cwd=grader, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    peak = 0
    while process.poll() is None and time.monotonic() - start < timeout:
        peak = max(peak, peak_memory(process.pid))
        time.sleep(0.05)
    hung = process.poll() is None
    if hung:
        process.kill()
    out, err = process.communicate()
    gradebook = folder / "gradebook.csv"
    rows = None
    if gradebook.is_file():
        import csv

        with gradebook.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    measured = {}  # student -> what the notebook printed on its MEASURE lines (in its outputs)
    for path in runs.rglob("*.ipynb") if runs.is_dir() else []:
        # A cell's stream text joined first: under load the kernel may flush one print in two outputs.
        outputs = ["".join(o.get("text", "") for o in cell.get("outputs", [])) for cell in nbformat.read(path, 4).cells]
        lines = [line for text in outputs for line in text.splitlines() if line.startswith("MEASURE")]
        measured[os.fsdecode(path.relative_to(runs).parts[0])] = " ".join(lines)
    return {"status": "hung" if hung else process.returncode, "rows": rows, "peak": peak, "measured": measured,
            "seconds": time.monotonic() - start, "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace")}


def summary(name, result: dict) -> str:
    rows = result["rows"]
    shown = name.decode("utf-8", "backslashreplace") if isinstance(name, bytes) else name
    marks = "-" if rows is None else "".join(
        r["passed"][0] for r in rows if r["exercise"] and r["student"] not in (HONEST,))
    honest = "-" if rows is None else "".join(r["passed"][0] for r in rows if r["student"] == HONEST)
    last = (result["stderr"].strip().splitlines() or [""])[-1][:100]
    return (f"{shown!r:34} exit {result['status']!s:4} gradebook {'yes' if rows is not None else 'no ':3} "
            f"marks {marks:6} classmate {honest or 'not graded':10} grader peak {result['peak'] / 2**20:6.0f} MB "
            f"{result['seconds']:5.0f} s  {' '.join(result['measured'].values())[:120]} {last}")


def main(argv: list[str]) -> int:
    target = Path(argv[0])
    if "--one-by-one" in argv:
        for name in CASES:
            folder = Path(tempfile.mkdtemp(dir=target))
            write_class(folder, [name])
            print(summary(name, grade_and_measure(folder, timeout=400)), flush=True)
        return 0
    write_class(target)
    result = grade_and_measure(target, timeout=1800)
    print(summary("the whole class", result))
    print(result["stdout"][-3000:], result["stderr"][-3000:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
