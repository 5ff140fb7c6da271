"""A lost node ends the run with one line, and no process outlives it: two torchrun agents on localhost, one node
killed in the middle of training (its worker, or its agent with kill -9)."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from nodes import TIMEOUT, error_lines, finish, start_nodes

from albert_mini.training.checkpoint import list_checkpoints

LONG = ["--steps", "100000", "--save-every", "20", "--keep", "2"]


def children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def training_nodes(tmp_path):
    """Two nodes training a long run, once its first checkpoint is written: (agents, {agent: its worker}, out)."""
    out = tmp_path / "run"
    agents = start_nodes(out, tmp_path, [LONG, LONG])
    deadline = time.monotonic() + TIMEOUT
    while not list_checkpoints(out):
        assert all(a.poll() is None for a in agents), "a node ended before its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.2)
    workers = {a.pid: children(a.pid) for a in agents}
    assert all(len(w) == 1 for w in workers.values()), workers
    return agents, {pid: w[0] for pid, w in workers.items()}, out


def ended(agents, workers):
    """Every agent's result, once every process of both nodes has ended (a hang or an orphan fails the test)."""
    everyone = [*workers.values(), *(a.pid for a in agents)]
    try:
        done = finish(agents)
        deadline = time.monotonic() + 60  # not a speed goal: how long an orphan may take to show
        while any(running(p) for p in everyone) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in everyone if running(p)]
    finally:
        for pid in everyone:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    assert left == [], f"processes outlived the run: {left}"
    return done


@pytest.mark.slow
def test_a_killed_worker_ends_the_other_node_with_one_line_naming_it_the_step_and_the_checkpoint(tmp_path):
    agents, workers, out = training_nodes(tmp_path)
    os.kill(workers[agents[1].pid], signal.SIGKILL)
    done = ended(agents, workers)
    ours = error_lines(done[0].stderr)
    assert len(ours) == 1, done[0].stderr[-3000:]
    match = re.fullmatch(r"error: node 1 of the run was lost at step (\d+) \(.+\); the newest checkpoint is (\S+); "
                         r"start every node again to resume", ours[0])
    assert match, ours[0]
    assert Path(match.group(2)) == list_checkpoints(out)[-1]
    assert re.search(r"exitcode\s*: 2\b", done[0].stderr), done[0].stderr[-2000:]  # the survivor's status
    assert "Traceback" not in done[0].stderr[:done[0].stderr.index(ours[0])]  # the worker's own: none


@pytest.mark.slow
def test_a_node_whose_agent_is_killed_leaves_no_worker_and_both_save_the_same_step(tmp_path):
    agents, workers, out = training_nodes(tmp_path)
    before = list_checkpoints(out)[-1].name
    os.kill(agents[1].pid, signal.SIGKILL)
    done = ended(agents, workers)
    # The orphaned worker got SIGTERM from the kernel: it finished its step, the ranks voted, both saved it.
    ours = error_lines(done[0].stderr)
    assert len(ours) == 1 and ours[0].startswith("error: stopped by a signal to another rank after step"), \
        done[0].stderr[-3000:]
    step = int(re.search(r"after step (\d+)", ours[0]).group(1))
    assert list_checkpoints(out)[-1].name == f"step-{step:07d}" and f"step-{step:07d}" > before
