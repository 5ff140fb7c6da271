"""Fault injection: a checkpoint save stopped at every one of its file-system steps.

Each step of `save_checkpoint` (create, write, fsync and rename of every file and directory, deletion of old
checkpoints) calls checkpoint's fault hook first. Three kinds of fault stop the save there:
- kill -9: a forked child runs the save and SIGKILLs itself at step k (no cleanup code runs at all);
- an exception raised by the hook (an interrupted save inside a live process);
- a full disk: OSError(ENOSPC) at step k.
After each, every checkpoint left on disk verifies, the newest is the old one (or the new one once the rename
into place happened), and a resumed run ends with weights and optimizer state bit-identical to a run that was
never interrupted. Two saves are attacked: the first of a run (it creates checkpoints/) and a later one that
finds a temp directory left by an earlier crash and deletes the previous checkpoint (--keep 1).

Two kills in a row: after the fault at step k, the run is resumed and the first save it makes is stopped at its
own step k by the same kind of fault (it starts by sweeping what the first fault left). After both, the run
directory is still a run's (nothing in it is foreign), every checkpoint verifies, nothing committed is lost,
and resuming once more ends bit-identical to the uninterrupted run, with a metrics log that reads as its log.
18 + 20 kill points x 3 kinds: 114 single faults and 114 double ones.
"""

from __future__ import annotations

import copy
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    list_checkpoints,
    load_pretrained,
    save_checkpoint,
    set_fault_hook,
    verify_checkpoint,
)
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.rundir import RUN, inspect, read_metrics
from albert_mini.training.trainer import TrainConfig, Trainer
from cli_helpers import REPO

CONFIG = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
B, T, STEPS, KEEP = 4, 16, 6, 1
STALE = ".tmp-step-0000004-99999"  # what a save killed in an earlier life of the run left behind


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Every run of this module, the module-scoped ones too, on one thread: bit-exact comparisons need that."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def no_hook_left():
    yield
    set_fault_hook(None)


class StopBeforeSave(Exception):
    """Ends a run just before a save, keeping what that save would have written."""


class CapturingTrainer(Trainer):
    """A trainer that stops at the save of `stop_at` and keeps the model and trainer state of that save."""

    stop_at: int | None = None

    def save(self):
        if self.step == self.stop_at:
            self.captured = (copy.deepcopy(self.model), self.state_dict())
            raise StopBeforeSave
        return super().save()


def make_trainer(out_dir, init_seed=0, trainer_class=Trainer):
    torch.manual_seed(init_seed)
    model = AlbertForPreTraining(CONFIG)
    optimizer = build_optimizer(model, "lamb", lr=2e-3)
    # Train lines every 3 steps and evaluations every 4, checkpoints every 2: the checkpoints hold steps not yet
    # logged, and the last lines of the run follow the last checkpoint's step.
    config = TrainConfig(max_steps=STEPS, accumulate=1, log_every=3, eval_every=4, save_every=2,
                         keep_checkpoints=KEEP, out_dir=str(out_dir), progress=False)
    source = SyntheticBatches(CONFIG.vocab_size, B, T, seed=5)
    validation = SyntheticBatches(CONFIG.vocab_size, B, T, seed=6).take(1)
    return trainer_class(model, optimizer, WarmupPolyDecay(2e-3, STEPS, 1), source, config, val_batches=validation)


def final_state(trainer) -> dict:
    state = {f"w.{k}": v.clone() for k, v in trainer.model.state_dict().items()}
    for i, p in enumerate(trainer.model.parameters()):
        for k, v in trainer.optimizer.state[p].items():
            state[f"opt.{i}.{k}"] = v.clone() if torch.is_tensor(v) else v
    return state


def log_of(run_dir) -> list[dict]:
    """The train and eval lines of a run's metrics.jsonl, without their timings (which differ between runs)."""
    timing = {"elapsed_s", "tokens_per_s"}
    return [{k: v for k, v in r.items() if k not in timing} for r in read_metrics(run_dir / "metrics.jsonl")[0]
            if r["type"] != "resume"]


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    """The final weights and optimizer state, and the log, of a run that nothing interrupts."""
    out = tmp_path_factory.mktemp("straight")
    trainer = make_trainer(out)
    trainer.train()
    return final_state(trainer), log_of(out)


@pytest.fixture(scope="module")
def straight(straight_run):
    return straight_run[0]


@pytest.fixture(scope="module", params=["first save", "later save"])
def scenario(request, tmp_path_factory):
    """(run directory just before the save, the step, the model and trainer state it saves, steps it goes through)."""
    stop_at = 2 if request.param == "first save" else 4
    template = tmp_path_factory.mktemp("template")
    trainer = make_trainer(template, trainer_class=CapturingTrainer)
    trainer.stop_at = stop_at
    with pytest.raises(StopBeforeSave):
        trainer.train()
    model, state = trainer.captured
    if stop_at == 4:
        stale = template / "checkpoints" / STALE
        stale.mkdir()
        (stale / "model.safetensors").write_bytes(b"half a file")
    labels = []
    rehearsal = tmp_path_factory.mktemp("rehearsal") / "run"
    shutil.copytree(template, rehearsal)
    set_fault_hook(labels.append)
    try:
        save_checkpoint(rehearsal, stop_at, model, state, keep=KEEP)
    finally:
        set_fault_hook(None)
    return template, stop_at, model, state, labels


def test_every_write_fsync_and_rename_of_a_save_is_a_fault_point(scenario):
    _, stop_at, _, _, labels = scenario
    assert len(labels) == len(set(labels))  # every step is one distinct point
    for name in ("model.safetensors", "trainer_state.pt", "config.json", "manifest.json"):
        for step in ("create", "write the second half of", "fsync"):
            assert f"{step} {name}" in labels
    assert {"fsync the temp directory", "rename the temp directory into place", "fsync checkpoints/"} <= set(labels)
    if stop_at == 2:
        assert labels[:2] == ["mkdir checkpoints/", "fsync the run directory"] and len(labels) == 18
    else:
        assert labels[0] == f"remove {STALE}" and len(labels) == 20
        assert labels[-3:] == ["rename step-0000002 for deletion", "fsync checkpoints/ after the rename",
                               "delete step-0000002"]


def fault_at(k: int, fault):
    """A hook that lets k steps happen and calls `fault()` at the next one."""
    count = iter(range(10**6))

    def hook(label):
        if next(count) == k:
            fault(label)
    return hook


def save_in_a_child_killed_at(k: int, run_dir, step, model, state) -> None:
    """Fork; the child saves and SIGKILLs itself at step k; the parent checks it died of that signal."""
    def work():
        set_fault_hook(fault_at(k, lambda label: os.kill(os.getpid(), signal.SIGKILL)))
        save_checkpoint(run_dir, step, model, state, keep=KEEP)

    in_a_child_killed(work, f"the child saving with a kill at step {k}")


def expected_latest(stop_at: int, labels: list[str], k: int) -> str | None:
    """The newest checkpoint after a fault at step k: the new one once its rename into place has run."""
    committed = k > labels.index("rename the temp directory into place")
    if committed:
        return f"step-{stop_at:07d}"
    return None if stop_at == 2 else "step-0000002"


def check_nothing_lost_and_resume_exactly(run_dir, expected: str | None, straight: dict) -> None:
    """Every checkpoint verifies, the newest is `expected`, and resuming reproduces the straight run bit for bit."""
    for checkpoint in list_checkpoints(run_dir):
        verify_checkpoint(checkpoint)
    latest = latest_checkpoint(run_dir)
    assert (latest.name if latest else None) == expected
    if latest is not None:
        load_pretrained(latest)
    random.seed(99), np.random.seed(99), torch.manual_seed(99)  # a new process: scrambled global RNGs
    # With a checkpoint the weights must come from it (another init proves it); without one the same command
    # starts the run again from its seed.
    resumed = make_trainer(run_dir, init_seed=1 if latest else 0)
    assert resumed.resume() == (int(expected[5:]) if expected else 0)
    resumed.train()
    state = final_state(resumed)
    assert state.keys() == straight.keys()
    for name, value in straight.items():
        assert (torch.equal(value, state[name]) if torch.is_tensor(value) else value == state[name]), name
    assert not list((run_dir / "checkpoints").glob(".tmp-*"))  # the next saves swept every leftover


def fresh_copy(template, tmp_path, k):
    run_dir = tmp_path / f"case-{k:02d}"
    shutil.copytree(template, run_dir)
    return run_dir


@pytest.mark.slow
def test_kill_9_at_every_step_of_a_save_loses_nothing_and_resumes_bit_exactly(scenario, straight, tmp_path):
    template, stop_at, model, state, labels = scenario
    for k in range(len(labels)):
        run_dir = fresh_copy(template, tmp_path, k)
        save_in_a_child_killed_at(k, run_dir, stop_at, model, state)
        check_nothing_lost_and_resume_exactly(run_dir, expected_latest(stop_at, labels, k), straight)


class InjectedFault(Exception):
    """Raised inside a save by the test's hook."""


@pytest.mark.slow
def test_an_exception_at_every_step_of_a_save_loses_nothing_and_resumes_bit_exactly(scenario, straight, tmp_path):
    template, stop_at, model, state, labels = scenario

    def fault(label):
        raise InjectedFault(label)

    for k in range(len(labels)):
        run_dir = fresh_copy(template, tmp_path, k)
        set_fault_hook(fault_at(k, fault))
        with pytest.raises(InjectedFault, match=labels[k]):
            save_checkpoint(run_dir, stop_at, model, state, keep=KEEP)
        set_fault_hook(None)
        check_nothing_lost_and_resume_exactly(run_dir, expected_latest(stop_at, labels, k), straight)


def test_a_full_disk_at_every_step_of_a_save_is_reported_and_loses_nothing(scenario, tmp_path):
    template, stop_at, model, state, labels = scenario

    def disk_full(label):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), label)

    for k in range(len(labels)):
        run_dir = fresh_copy(template, tmp_path, k)
        before = {p.name: p.read_bytes() for c in list_checkpoints(run_dir) for p in c.iterdir()}
        set_fault_hook(fault_at(k, disk_full))
        with pytest.raises(CheckpointError) as error:
            save_checkpoint(run_dir, stop_at, model, state, keep=KEEP)
        set_fault_hook(None)
        expected = expected_latest(stop_at, labels, k)
        message = str(error.value)
        if expected == f"step-{stop_at:07d}":  # the new checkpoint is in place; a step after its rename failed
            assert f"step-{stop_at:07d} is saved, but" in message
        else:
            assert "the disk is full: No space left on device" in message and "rerun the same command" in message
            kept = "step-0000002 is intact" if stop_at == 4 else "there was no earlier checkpoint"
            assert kept in message
            assert not (run_dir / "checkpoints" / f".tmp-step-{stop_at:07d}-{os.getpid()}").exists()
            # The earlier checkpoint is byte for byte what it was.
            assert {p.name: p.read_bytes() for c in list_checkpoints(run_dir) for p in c.iterdir()} == before
        for checkpoint in list_checkpoints(run_dir):
            verify_checkpoint(checkpoint)
        latest = latest_checkpoint(run_dir)
        assert (latest.name if latest else None) == expected


DRIVER = """
import os, signal, sys
from albert_mini.training import checkpoint
from albert_mini.commands.pretrain import main

seen = []

def kill_in_the_second_save(label):  # just before the manifest of step 4 is fsynced
    seen.append(label)
    if label == "fsync manifest.json" and seen.count(label) == 2:
        os.kill(os.getpid(), signal.SIGKILL)

checkpoint.set_fault_hook(kill_in_the_second_save)
main(sys.argv[1:])
"""


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_the_cli_killed_inside_a_save_resumes_bit_exactly_with_the_same_command(tmp_path):
    from albert_mini.commands.pretrain import main

    flags = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "16", "--batch-size", "4", "--steps",
             "6", "--save-every", "2", "--eval-every", "0", "--eval-batches", "1", "--keep", "1", "--quiet"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    killed = subprocess.run([sys.executable, "-c", DRIVER, *flags, "--out", str(tmp_path / "resumed")], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    run_dir = tmp_path / "resumed"
    assert [p.name for p in list_checkpoints(run_dir)] == ["step-0000002"]  # step 4 died before its rename
    assert list((run_dir / "checkpoints").glob(".tmp-step-0000004-*"))
    main(flags + ["--out", str(run_dir)])  # the same command, in a new process's place
    main(flags + ["--out", str(tmp_path / "straight")])
    a = load_file(latest_checkpoint(tmp_path / "straight") / "model.safetensors")
    b = load_file(latest_checkpoint(run_dir) / "model.safetensors")
    assert latest_checkpoint(run_dir).name == "step-0000006" and a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert not list((run_dir / "checkpoints").glob(".tmp-*"))


# ---------------------------------------------------------------------- two kills in a row
KINDS = ("kill -9", "exception", "full disk")


def fault_of(kind: str):
    """What a fault of `kind` does at a step (kill -9 kills the process it runs in: use it in a child)."""
    def fault(label):
        if kind == "kill -9":
            os.kill(os.getpid(), signal.SIGKILL)
        if kind == "exception":
            raise InjectedFault(label)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), label)
    return fault


EXPECTED_ERROR = {"exception": InjectedFault, "full disk": CheckpointError}


def in_a_child_killed(work, what: str = "the child") -> None:
    """Fork; the child runs `work()`, which must kill it with SIGKILL; the parent checks it died so (`what` names
    the child in a failure)."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 3
        try:
            work()
        finally:
            os._exit(status)
    deadline = time.monotonic() + 120
    while (result := os.waitpid(pid, os.WNOHANG)) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"{what} hung")
        time.sleep(0.005)
    assert os.WIFSIGNALED(result[1]) and os.WTERMSIG(result[1]) == signal.SIGKILL, f"{what}: status {result[1]}"


def first_fault(kind, k, run_dir, step, model, state) -> None:
    """The save of `step` stopped at its step k by a fault of `kind`."""
    def save():
        set_fault_hook(fault_at(k, fault_of(kind)))
        save_checkpoint(run_dir, step, model, state, keep=KEEP)

    stopped_by(kind, save)


def second_fault(kind, k, run_dir, latest) -> None:
    """The run resumed in `run_dir`, its first save stopped at its step k by a fault of `kind`."""
    def resume_and_train():
        hits = []

        def hook(label):
            hits.append(label)
            if len(hits) == k + 1:
                fault_of(kind)(label)
        random.seed(98), np.random.seed(98), torch.manual_seed(98)
        trainer = make_trainer(run_dir, init_seed=1 if latest else 0)
        trainer.resume()
        set_fault_hook(hook)
        trainer.train()
        pytest.fail(f"the save after resuming has no step {k}: {hits}")  # never reached: the fault stops it

    stopped_by(kind, resume_and_train)


def stopped_by(kind, action) -> None:
    """Run `action` until the fault of `kind` stops it: in a child killed by it (kill -9), or raising it here."""
    if kind == "kill -9":
        in_a_child_killed(action)
        return
    with pytest.raises(EXPECTED_ERROR[kind]):
        action()
    set_fault_hook(None)


def assert_still_a_run(run_dir) -> str | None:
    """Nothing in the directory is foreign to a run and every checkpoint verifies; the newest one's name."""
    assert inspect(run_dir, RUN).foreign == []
    for checkpoint in list_checkpoints(run_dir):
        verify_checkpoint(checkpoint)
    latest = latest_checkpoint(run_dir)
    return latest.name if latest else None


def double_fault_case(kind, k, scenario, straight_run, tmp_path) -> None:
    template, stop_at, model, state, labels = scenario
    run_dir = fresh_copy(template, tmp_path, k)
    first_fault(kind, k, run_dir, stop_at, model, state)
    after_first = assert_still_a_run(run_dir)
    assert after_first == expected_latest(stop_at, labels, k)
    second_fault(kind, k, run_dir, after_first)
    after_second = assert_still_a_run(run_dir)
    assert (after_second or "") >= (after_first or "")  # nothing committed is ever lost
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    resumed = make_trainer(run_dir, init_seed=1 if after_second else 0)
    resumed.resume()
    resumed.train()
    state_after, log = final_state(resumed), log_of(run_dir)
    for name, value in straight_run[0].items():
        assert (torch.equal(value, state_after[name]) if torch.is_tensor(value) else value == state_after[name]), \
            f"{kind} at {k} ({labels[k]}), twice: {name}"
    assert log == straight_run[1], f"{kind} at {k} ({labels[k]}), twice: the log"
    assert not list((run_dir / "checkpoints").glob(".tmp-*"))


@pytest.mark.slow
def test_two_kill_9s_in_a_row_at_every_step_of_a_save_lose_nothing_and_resume_bit_exactly(scenario, straight_run,
                                                                                          tmp_path):
    for k in range(len(scenario[4])):
        double_fault_case("kill -9", k, scenario, straight_run, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["exception", "full disk"])
def test_two_faults_in_a_row_at_every_step_of_a_save_lose_nothing_and_resume_bit_exactly(kind, scenario,
                                                                                         straight_run, tmp_path):
    for k in range(len(scenario[4])):
        double_fault_case(kind, k, scenario, straight_run, tmp_path)


def test_the_fault_cases_are_counted(scenario):
    """The closing count of the docstring: kill points of the two saves x kinds, once and twice."""
    points = {2: 18, 4: 20}[scenario[1]]
    assert len(scenario[4]) == points
