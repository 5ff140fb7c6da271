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
from same_run import assert_same_run

from albert_mini.commands.pretrain import main as pretrain
from albert_mini.training import preemption, trainer
from albert_mini.training.checkpoint import list_checkpoints
from albert_mini.training.preemption import REPEAT_S

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


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The run never stopped, in one process."""
    tmp = tmp_path_factory.mktemp("straight")
    done = command(tmp, tmp / "run")
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "run"


@pytest.fixture(scope="module")
def straight_here(tmp_path_factory):
    """The run never stopped, in this process on one thread, as the signalled runs of this process are."""
    out = tmp_path_factory.mktemp("straight-here") / "run"
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pretrain(FLAGS + ["--out", str(out)])
    finally:
        torch.set_num_threads(before)
    return out


@pytest.fixture
def own_signal_handlers():
    """A run stopped by a signal leaves preemption's handlers in place (a second signal ends a real process at
    once): the test's process gets its own back afterwards, and preemption's state."""
    handlers = {s: signal.getsignal(s) for s in preemption.SIGNALS}
    state = dict(preemption._state)
    yield
    for s, handler in handlers.items():
        signal.signal(s, handler)
    preemption._state.update(state)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1], ids=["sigterm", "sigusr1"])
def test_a_signal_saves_the_step_under_way_and_the_same_command_resumes_bit_identically(
        signum, straight_here, tmp_path, monkeypatch, capsys, one_thread, own_signal_handlers):
    """In this process: the command signalled from inside step 5 (the handler runs as the kill returns, so the
    signal lands mid-step, deterministically). A real process's exit status: the second-signal test below and
    test_loader_workers_preemption.py."""
    out = tmp_path / "run"
    real = trainer.Trainer.train_step

    def train_step(self, *args, **kwargs):
        if self.step + 1 == 5:
            # Only to preemption's handler: the default one would end the test's process.
            assert signal.getsignal(signum) is preemption._on_signal, "the trainer is not watching for signals"
            os.kill(os.getpid(), signum)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(trainer.Trainer, "train_step", train_step)
    with pytest.raises(SystemExit) as stopped:
        pretrain(FLAGS + ["--out", str(out)])
    assert stopped.value.code == 128 + signum
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: stopped by {signal.Signals(signum).name} after step 5"), \
        err
    assert "step-0000005" in lines[0] and "resumes" in lines[0]
    assert [p.name for p in list_checkpoints(out)] == ["step-0000003", "step-0000005"]
    assert not list((out / "checkpoints").glob(".tmp-*"))
    monkeypatch.setattr(trainer.Trainer, "train_step", real)
    assert pretrain(FLAGS + ["--out", str(out)]).step == 8
    assert '"type": "resume", "step": 5' in (out / "metrics.jsonl").read_text()
    assert_same_run(out, straight_here)


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
