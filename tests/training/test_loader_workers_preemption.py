"""A preempted run fed by DataLoader workers saves as one fed without: a scheduler or Ctrl-C signals the whole
process group, workers included, and the workers let the signal pass (the run they feed decides), so `pretrain`
ends after the step under way with its checkpoint, its one line and 128 + the signal, leaves no process behind,
and the same command resumes it bit-identical to a run never stopped."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_preemption
from same_run import assert_same_run
from test_preemption import FLAGS, REPO, TIMEOUT, env_for

from albert_mini.training.checkpoint import list_checkpoints

WORKERS = 2
straight = test_preemption.straight  # the fixture: a run never stopped, fed without workers (the same bits)
# `pretrain` fed by loader workers (TrainConfig.workers, which the command leaves at 0 on a CPU). With a step
# `at` > 0, it writes a mark once the workers have built batches for it and waits there (at most a minute) for the
# signal the test sends to the whole group: the signal lands inside that step, deterministically.
FED_BY_WORKERS = """
import dataclasses, os, sys, time
from pathlib import Path
from albert_mini.training import preemption, run, trainer
at, mark, workers = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
config = run.train_config
run.train_config = lambda setup: dataclasses.replace(config(setup), workers=workers)
real = trainer.Trainer.train_step
def train_step(self, *args, **kwargs):
    if self.step + 1 == at:
        mark.write_text(str(os.getpid()))
        deadline = time.monotonic() + 60
        while preemption.requested() is None and time.monotonic() < deadline:
            time.sleep(0.01)
    return real(self, *args, **kwargs)
trainer.Trainer.train_step = train_step
from albert_mini.commands import main
main(sys.argv[4:])
"""


def group_members(group: int) -> list[int]:
    """The processes of process group `group` still alive (zombies too: an unreaped worker is left over)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group:
                members.append(int(entry))
    return members


def start(tmp_path, out, at: int) -> tuple[subprocess.Popen, Path]:
    script, mark = tmp_path / "fed_by_workers.py", tmp_path / f"mark-{at}"
    script.write_text(FED_BY_WORKERS)
    argv = [sys.executable, str(script), str(at), str(mark), str(WORKERS), "pretrain", *FLAGS, "--out", str(out)]
    process = subprocess.Popen(argv, cwd=REPO, env=env_for(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    return process, mark


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process groups from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_signal_to_the_whole_group_saves_the_step_and_the_resume_is_bit_identical(signum, straight, tmp_path):
    out = tmp_path / "run"
    process, mark = start(tmp_path, out, at=5)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not mark.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), process.communicate()[1][-3000:]
        assert len(group_members(process.pid)) >= 1 + WORKERS  # the workers are there to be signalled
        signalled = time.monotonic()
        os.killpg(process.pid, signum)
        stdout, stderr = process.communicate(timeout=60)  # (a worker that keeps the run from ending fails here)
        took = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    if signum == signal.SIGINT:  # Ctrl-C stops at once (no checkpoint), with one line and 130, as without workers
        assert process.returncode == 130, stderr[-3000:]
        assert [line for line in stderr.splitlines() if line.strip()] == [stderr.strip()]
        assert stderr.startswith("error: interrupted"), stderr[-3000:]
        assert "DataLoader worker" not in stderr
    else:
        assert process.returncode == 128 + signum, stderr[-3000:]
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: stopped by SIGTERM after step 5"), stderr[-3000:]
        assert "step-0000005" in lines[0] and "resumes" in lines[0]
        assert [p.name for p in list_checkpoints(out)] == ["step-0000003", "step-0000005"]
    assert took < 30
    left = time.monotonic() + 5
    while group_members(process.pid) and time.monotonic() < left:
        time.sleep(0.05)
    assert group_members(process.pid) == []  # no worker outlives the run
    again, _ = start(tmp_path, out, at=0)
    _, stderr = again.communicate(timeout=TIMEOUT)
    assert again.returncode == 0, stderr[-3000:]
    assert_same_run(out, straight)
