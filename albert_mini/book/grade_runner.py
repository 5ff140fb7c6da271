"""Inside the grading sandbox: run one prepared notebook in a fresh kernel and hand back how the run ended.

    main([IN, WORK, IO, OUT, TIME_LIMIT, FAST, PROCESSES, OUT_BYTES])

Started by albert_mini.book.grade with `python -c` (the package has one `python -m` entry point). IN (read-only
in the sandbox) holds run.ipynb (the student's cells with grading cells in place of the check cells), the
grader's requests and work/, the copy of the student's folder; this copies work/ to WORK and the requests to IO
(both in the sandbox's size-limited scratch), sets the process and file-size limits that every process it starts
inherits, runs the notebook (its grading cells write their answers to IO/answers/) and packs report.json, the
answers and executed.ipynb into OUT, the only file outside the scratch it can write: {"status": "done" | "timeout"
| "crashed" | "kernel-start", "cell": index, "errors": [[cell index, "Name: message"], ...]}. The report only
explains a run; no mark is read from it, and the student's code could rewrite any of it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import sys
import time
import zipfile
from pathlib import Path

from .grade_reading import Unreadable, read_regular


def limit_processes(processes: int, out_bytes: int) -> None:
    """The limits every process started from here inherits and cannot raise (no capability in the sandbox):
    processes of this user in the sandbox's user namespace, and the size of any file written."""
    if processes > 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (out_bytes, out_bytes))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing


def main(argv: list[str]) -> int:
    inputs, work, io_dir, out = (Path(a) for a in argv[:4])
    time_limit, fast, processes, out_bytes = float(argv[4]), argv[5] == "1", int(argv[6]), int(argv[7])
    limit_processes(processes, out_bytes)
    if not work.exists():
        shutil.copytree(inputs / "work", work)
    io_dir.mkdir(parents=True, exist_ok=True)
    for path in inputs.iterdir():
        if path.is_file():
            shutil.copyfile(path, io_dir / path.name)
    for folder in ("runtime", "ipython", "mpl"):
        Path(os.environ.get("HOME", str(io_dir)), folder).mkdir(parents=True, exist_ok=True)
    report = run(io_dir, work, time_limit, fast)
    (io_dir / "report.json").write_text(json.dumps(report))
    pack(io_dir, out, out_bytes)
    return 0


def run(io_dir: Path, work: Path, time_limit: float, fast: bool) -> dict:
    """Execute IO/run.ipynb with WORK as its folder; the report of how it ended (executed.ipynb beside it)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    notebook = nbformat.read(io_dir / "run.ipynb", as_version=4)
    deadline = time.monotonic() + time_limit
    client = NotebookClient(notebook, kernel_name="python3", allow_errors=True, interrupt_on_timeout=False,
                            startup_timeout=max(30, int(min(time_limit, 120))),
                            timeout_func=lambda cell: max(1, int(deadline - time.monotonic()) + 1),
                            resources={"metadata": {"path": str(work)}})
    started, running = [False], [0]

    def on_start(**_):
        started[0] = True

    def on_cell(cell, cell_index, **_):
        running[0] = cell_index

    client.on_notebook_start = on_start
    client.on_cell_execute = on_cell
    env = {**os.environ, "ALBERT_MINI_FAST": "1" if fast else "0"}
    report: dict = {"status": "done"}
    try:
        client.execute(env=env, stdout=sys.stderr, stderr=sys.stderr)
    except CellTimeoutError:
        report = {"status": "timeout", "cell": running[0]}
    except DeadKernelError as error:
        report = {"status": "crashed" if started[0] else "kernel-start", "cell": running[0],
                  "detail": str(error)[:300]}
    except Exception as error:  # the kernel would not start (a loaded machine): the grader tries again
        report = {"status": "kernel-start" if not started[0] else "crashed", "cell": running[0],
                  "detail": f"{type(error).__name__}: {error}"[:300]}
    report["errors"] = [[index, f"{o.get('ename', 'Error')}: {o.get('evalue', '')}"[:300]]
                        for index, cell in enumerate(notebook.cells) for o in cell.get("outputs", [])
                        if o.get("output_type") == "error"]
    try:
        nbformat.write(notebook, io_dir / "executed.ipynb")  # for --keep-runs: what the teacher can look at
    except OSError:
        pass  # the scratch is full (the student's doing): the report and answers still go back
    return report


def pack(io_dir: Path, out: Path, out_bytes: int) -> None:
    """report.json, answers/*.json and *.npz and executed.ipynb, stored in the zip OUT, each read as a regular
    file within what is left of OUT_BYTES (the student's processes may have replaced any of them)."""
    names = ["report.json", *sorted(f"answers/{p.name}" for p in (io_dir / "answers").glob("*.*")
                                    if p.suffix in (".json", ".npz")), "executed.ipynb"]
    left = out_bytes - 1_000_000  # room for the zip's own records
    with open(out, "r+b") as handle:
        handle.truncate(0)
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED) as bundle:
            for name in names[:4096]:
                try:
                    data = read_regular(io_dir / name, left)
                except Unreadable as problem:
                    data = json.dumps({"unreadable": str(problem)}).encode() if name.endswith(".json") else None
                if data is not None and len(data) <= left:
                    bundle.writestr(name, data)
                    left -= len(data)
