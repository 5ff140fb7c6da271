"""A preempted run saves: SIGTERM or SIGUSR1 ends `pretrain` after the step under way with a checkpoint, one line
and exit status 128 + the signal; the same command resumes it and ends bit-identical to a run never stopped; a second
signal ends it at once. Under DDP a signal to one rank stops every rank after the same step: test_ddp.py (a fake
world) and test_two_nodes.py (torchrun)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from albert_mini.training.checkpoint import list_checkpoints
from albert_mini.training.preemption import REPEAT_S
from albert_mini.training.rundir import read_metrics

REPO = Path(__file__).resolve().parents[2]
FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "32", "--batch-size", "2", "--steps", "8",
         "--lr", "2e-3", "--save-every", "3", "--keep", "3", "--eval-every", "0", "--eval-batches", "1",
         "--log-every", "2", "--quiet"]
TIMEOUT = 240  # seconds: a hang fails the test instead of holding CI
# The command, signalled from inside step `at` by rank `rank` (the handler runs as the kill returns, so the signal
# lands mid-step, deterministically); "twice": a second signal well after the first, before the step ends.
SIGNALLED = """
import os, sys, time
from albert_mini.training import trainer
at, signum, times, rank = (int(a) for a in sys.argv[1:5])
real = trainer.Trainer.train_step
def train_step(self, *args, **kwargs):
    if self.step + 1 == at and self.dist.rank == rank:
        os.kill(os.getpid(), signum)
        if times == 2:
            time.sleep(%r)
            os.kill(os.getpid(), signum)
    return real(self, *args, **kwargs)
trainer.Trainer.train_step = train_step
from albert_mini.commands import main
main(sys.argv[5:])
""" % (REPEAT_S + 1.0)


def env_for(tmp_path) -> dict:
    # one thread a process; torchrun's agent writes its log folders in the test's folder
    return {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path)}


def signalled(tmp_path, out, at, signum, times=1, rank=0) -> subprocess.CompletedProcess:
    script = tmp_path / "signalled.py"
    script.write_text(SIGNALLED)
    argv = [str(a) for a in (at, int(signum), times, rank)] + ["pretrain", *FLAGS, "--out", str(out)]
    return subprocess.run([sys.executable, str(script), *argv], cwd=REPO, env=env_for(tmp_path),
                          capture_output=True, text=True, timeout=TIMEOUT)


def command(tmp_path, out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "albert_mini", "pretrain", *FLAGS, "--out", str(out)], cwd=REPO,
                          env=env_for(tmp_path), capture_output=True, text=True, timeout=TIMEOUT)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def log_without_clocks(out) -> list[dict]:
    """metrics.jsonl as its readers take it, without the resume line and the wall-clock fields, which differ
    between any two runs."""
    lines = read_metrics(out / "metrics.jsonl")[0]
    return [{k: v for k, v in m.items() if k not in ("elapsed_s", "tokens_per_s")} for m in lines
            if m["type"] != "resume"]


def assert_same_run(out, straight) -> None:
    """Final weights and optimizer state bit-identical to the run never stopped, and its log line for line."""
    ours, theirs = list_checkpoints(out)[-1], list_checkpoints(straight)[-1]
    assert ours.name == theirs.name == "step-0000008"
    a, b = load_file(ours / "model.safetensors"), load_file(theirs / "model.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].equal(b[key]), f"{key} differs after the resume"
    moments = [torch.load(c / "trainer_state.pt", weights_only=True)["optimizer"]["state"] for c in (ours, theirs)]
    assert moments[0].keys() == moments[1].keys()
    for key in moments[0]:
        for name, tensor in moments[0][key].items():
            assert torch.equal(torch.as_tensor(tensor), torch.as_tensor(moments[1][key][name])), f"{key} {name}"
    assert log_without_clocks(out) == log_without_clocks(straight)


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The run never stopped, in one process."""
    tmp = tmp_path_factory.mktemp("straight")
    done = command(tmp, tmp / "run")
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "run"


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1], ids=["sigterm", "sigusr1"])
def test_a_signal_saves_the_step_under_way_and_the_same_command_resumes_bit_identically(signum, straight, tmp_path):
    out = tmp_path / "run"
    stopped = signalled(tmp_path, out, at=5, signum=signum)
    assert stopped.returncode == 128 + signum, stopped.stderr[-3000:]
    lines = stopped.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: stopped by {signal.Signals(signum).name} after step 5"), \
        stopped.stderr
    assert "step-0000005" in lines[0] and "resumes" in lines[0]
    assert [p.name for p in list_checkpoints(out)] == ["step-0000003", "step-0000005"]
    assert not list((out / "checkpoints").glob(".tmp-*"))
    again = command(tmp_path, out)
    assert again.returncode == 0, again.stderr[-3000:]
    assert '"type": "resume", "step": 5' in (out / "metrics.jsonl").read_text()
    assert_same_run(out, straight)


@pytest.mark.slow
def test_a_second_signal_ends_the_run_at_once_and_the_newest_checkpoint_stays_whole(straight, tmp_path):
    out = tmp_path / "run"
    start = time.monotonic()
    stopped = signalled(tmp_path, out, at=5, signum=signal.SIGTERM, times=2)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    assert error_lines(stopped.stderr) == [stopped.stderr.strip()]
    assert "stopped at once by a second SIGTERM" in stopped.stderr
    assert time.monotonic() - start < TIMEOUT
    assert [p.name for p in list_checkpoints(out)] == ["step-0000003"]  # step 5 was never finished
    again = command(tmp_path, out)
    assert again.returncode == 0, again.stderr[-3000:]
    assert_same_run(out, straight)
