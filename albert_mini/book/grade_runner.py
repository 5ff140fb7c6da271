"""Inside the grading sandbox: run one prepared notebook in a fresh kernel and report how the run ended.

    main([IO_FOLDER, WORK_FOLDER, TIME_LIMIT, FAST])

Started by albert_mini.book.grade with `python -c` (the package has one `python -m` entry point). IO_FOLDER
holds run.ipynb (the student's cells with grading cells in place of the check cells) and the grader's requests;
the kernel's grading cells write their answers there, and this writes report.json: {"status": "done" | "timeout" |
"crashed" | "kernel-start", "cell": index, "errors": [[cell index, "Name: message"], ...]}. The report only
explains a run (which cell raised, where time ran out); no mark is read from it, and the student's code could
rewrite it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    io_dir, work, time_limit, fast = Path(argv[0]), Path(argv[1]), float(argv[2]), argv[3] == "1"
    for folder in ("runtime", "ipython", "mpl"):
        Path(os.environ.get("HOME", str(io_dir)), folder).mkdir(parents=True, exist_ok=True)
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
    nbformat.write(notebook, io_dir / "executed.ipynb")  # for --keep-runs: what the teacher can look at
    (io_dir / "report.json").write_text(json.dumps(report))
    return 0
