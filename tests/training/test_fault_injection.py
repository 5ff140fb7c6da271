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

Preparing a text into the token cache is stopped the same three ways at each of its 8 points
(encoding, each file written, before and after the rename into place): the rerun refuses nothing, leaves no
partial folder and writes the bytes an uninterrupted preparation writes. And a `prepare` or a first
`pretrain --corpus` whose worker processes are busy is stopped by SIGTERM, SIGINT or kill -9: no worker outlives it.

A folder of outputs (`html`'s book, `exercises`' hand-out) being written is stopped the same three ways before and
after each of its file-system steps (every atomic write's rename, every deletion), for `html` once or twice in a
row: the same command run again finishes it without --overwrite, and the folder holds that output exactly.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.text import token_cache
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


# ---------------------------------------------------------------------- preparing a text
PREPARE_POINTS = ("encoding the second work item", "after tokens.bin", *(f"after {name}" for name in
                  token_cache.INDEX_NAMES), "before the rename into place", "after the rename into place")
PREPARE_ERROR = {"exception": InjectedFault, "full disk": OSError}


@pytest.fixture(scope="module")
def prepared_text(tmp_path_factory):
    """Austen's validation text in four files (four work items), and what an uninterrupted preparation writes."""
    from albert_mini.text.tokenizer import Tokenizer

    folder = tmp_path_factory.mktemp("prepare-text")
    blocks = (REPO / "data" / "austen" / "validation.txt").read_text(encoding="utf-8").split("\n\n")
    files = []
    for i in range(4):
        files.append(folder / f"part-{i}.txt")
        files[-1].write_text("\n\n".join(blocks[i * len(blocks) // 4:(i + 1) * len(blocks) // 4]), encoding="utf-8")
    tokenizer = Tokenizer.default()
    straight = prepare_into(folder / "straight", files, tokenizer)
    return files, tokenizer, straight.manifest["contents"]


def prepare_into(root, files, tokenizer, workers=1):
    return token_cache.prepare(files, tokenizer, "blank_line", root=root, workers=workers, progress=False,
                               say=lambda *a: None)


def stop_prepare_at(point: str, fault, patch) -> None:
    """Make the next preparation call `fault(point)` at `point`; `patch(owner, name, value)` sets an attribute."""
    if point == PREPARE_POINTS[0]:
        job, calls = token_cache._prepare_job, []

        def encode(work):
            calls.append(work)
            if len(calls) == 2:
                fault(point)
            return job(work)
        patch(token_cache, "_prepare_job", encode)
    elif point == "after tokens.bin":
        collect = token_cache._collect

        def collect_then_stop(*args):
            summary = collect(*args)
            fault(point)
            return summary
        patch(token_cache, "_collect", collect_then_stop)
    elif point.startswith("after ") and point[6:] in token_cache.INDEX_NAMES:
        save = token_cache._save

        def save_then_stop(path, array):
            written = save(path, array)
            if path.name == point[6:]:
                fault(point)
            return written
        patch(token_cache, "_save", save_then_stop)
    else:
        replace = os.replace

        def rename(source, destination):
            if point.startswith("before"):
                fault(point)
            replace(source, destination)
            if point.startswith("after"):
                fault(point)
        patch(os, "replace", rename)


@pytest.mark.parametrize("kind", KINDS)
def test_a_preparation_stopped_at_every_point_leaves_nothing_a_rerun_refuses(kind, prepared_text, tmp_path,
                                                                            monkeypatch):
    files, tokenizer, straight = prepared_text
    for point in PREPARE_POINTS:
        root = tmp_path / point.replace(" ", "-")

        def stopped(patch, point=point, root=root):
            stop_prepare_at(point, fault_of(kind), patch)
            prepare_into(root, files, tokenizer)

        if kind == "kill -9":
            in_a_child_killed(lambda: stopped(setattr), f"the preparation killed {point}")
        else:
            with pytest.raises(PREPARE_ERROR[kind], match=point):
                stopped(monkeypatch.setattr)
            monkeypatch.undo()
        again = prepare_into(root, files, tokenizer)  # the same command: maps, or prepares anew
        assert again.manifest["contents"] == straight, (kind, point)
        assert sorted(p.name for p in root.iterdir()) == sorted([again.folder.name, f"{again.folder.name}.lock"])


STUCK_WORKERS = """
import os, sys, time
from pathlib import Path
from albert_mini.text import token_cache

def stuck(job):  # a worker marks that it started, then works for an hour: only its parent's end can end it
    Path(sys.argv[1], str(os.getpid())).touch()
    time.sleep(3600)

token_cache._prepare_job = stuck
from albert_mini.commands import main
main(sys.argv[2:])
"""


def started(pid: int) -> str | None:
    """A process's start time (field 22 of /proc/PID/stat) while it runs, None once it is gone or a zombie: with
    its pid, it names one process even if the pid is reused."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
@pytest.mark.skipif(not sys.platform.startswith("linux") or token_cache.default_workers() < 2,
                    reason="reads /proc; needs two cores for two worker processes")
@pytest.mark.parametrize("command, stop", [("prepare", signal.SIGTERM), ("prepare", signal.SIGINT),
                                           ("prepare", signal.SIGKILL), ("pretrain", signal.SIGTERM),
                                           ("pretrain", signal.SIGKILL)],
                         ids=["prepare-sigterm", "prepare-sigint", "prepare-kill-9", "pretrain-sigterm",
                              "pretrain-kill-9"])
def test_no_worker_outlives_a_stopped_preparation(command, stop, prepared_text, tmp_path):
    """The workers of `prepare` (or of a first `pretrain --corpus`) end with their parent, however it
    ends; the partial folder a kill leaves is cleaned by the next run, which prepares the same bytes."""
    files, tokenizer, straight = prepared_text
    marks, folder = tmp_path / "marks", tmp_path / "texts"
    marks.mkdir()
    folder.mkdir()
    for path in files:
        shutil.copy(path, folder)
    argv = [command, "--corpus", str(folder), "--tokenizer", str(tokenizer.path), "--split-by", "blank-line"]
    argv += (["--workers", "2", "--quiet"] if command == "prepare" else
             ["--preset", "albert-nano", "--steps", "1", "--quiet", "--out", str(tmp_path / "run")])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ALBERT_MINI_CACHE": str(tmp_path / "cache")}
    with open(tmp_path / "stderr", "w") as stderr:
        parent = subprocess.Popen([sys.executable, "-c", STUCK_WORKERS, str(marks), *argv], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=stderr,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal's
    workers = {}
    try:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 2:
            assert parent.poll() is None, (tmp_path / "stderr").read_text()[-2000:]
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        workers = {int(p.name): started(int(p.name)) for p in marks.iterdir()}
        os.kill(parent.pid, stop)
        parent.wait(timeout=180)  # not a speed goal: on a loaded machine the parent's clean-up takes a while
        deadline = time.monotonic() + 30  # not a speed goal: how long a hang may take to show
        while any(started(pid) == start for pid, start in workers.items()) and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = [pid for pid, start in workers.items() if started(pid) == start]
    finally:
        parent.kill()
        for pid in [pid for pid, start in workers.items() if started(pid) == start]:
            os.kill(pid, signal.SIGKILL)  # so that a failure leaves no process behind either
    assert alive == [], f"{len(alive)} worker(s) outlived their parent"
    if stop == signal.SIGINT:
        err = (tmp_path / "stderr").read_text()
        assert parent.returncode == 130 and err.count("\n") == 1 and "interrupted" in err, err
    else:
        assert parent.returncode == -stop
    again = prepare_into(tmp_path / "cache", sorted(folder.glob("*.txt")), tokenizer, workers=2)
    assert again.manifest["contents"] == straight
    assert not list((tmp_path / "cache").glob("*.partial-*"))


# ---------------------------------------------------------------------- folders of outputs
OUTPUT_STEPS = ("replace", "unlink", "rmdir")  # what writing a folder of outputs does to the file system
OUTPUT_ERROR = {"exception": InjectedFault, "full disk": OSError}


def stop_outputs_at(k: int, fault, patch) -> list[str]:
    """Make the next writes call `fault` at event k: just before or just after a file-system step (os.replace,
    os.unlink, os.rmdir: every atomic write's rename, every deletion), counted together. Returns the events."""
    events, real_steps = [], {name: getattr(os, name) for name in OUTPUT_STEPS}
    for name in OUTPUT_STEPS:
        def step(*args, name=name, **kwargs):
            real = real_steps[name]
            shown = Path(args[1] if name == "replace" else args[0]).name
            events.append(f"before {name} {shown}")
            if len(events) == k + 1:
                fault(events[-1])
            result = real(*args, **kwargs)
            events.append(f"after {name} {shown}")
            if len(events) == k + 1:
                fault(events[-1])
            return result
        patch(os, name, step)
    return events


def output_events(work) -> list[str]:
    """Every event at which `work()` can be stopped (a run of it with a fault that never fires)."""
    with pytest.MonkeyPatch.context() as patches:
        events = stop_outputs_at(-1, None, patches.setattr)
        work()
    return events


def stopped_at(kind, k, work, what) -> None:
    """`work()` stopped at event k by a fault of `kind`: in a child killed by it (kill -9), or raised here."""
    def run(patch):
        stop_outputs_at(k, fault_of(kind), patch)
        work()

    if kind == "kill -9":
        in_a_child_killed(lambda: run(setattr), what)
        return
    with pytest.MonkeyPatch.context() as patches, pytest.raises(OUTPUT_ERROR[kind]):
        run(patches.setattr)


def folder_contents(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_exactly(out: Path, files: dict[str, bytes], command: str, case) -> None:
    """`out` holds `files` and the record listing them, nothing else, and the record expects no more writes."""
    from albert_mini.paths import sha256_bytes
    from albert_mini.safe_files import OUTPUT_RECORD

    record = json.loads((out / OUTPUT_RECORD).read_text())
    assert {**files, OUTPUT_RECORD: (out / OUTPUT_RECORD).read_bytes()} == folder_contents(out), case
    assert record["files"] == {name: sha256_bytes(data) for name, data in files.items()}, case
    assert "writing" not in record and record["command"] == command, case


def books(root: Path) -> list[Path]:
    """Three small books, as Sphinx would leave them in its temp folder: the second drops and adds pages."""
    pages = [{"index.html": "old index", "_static/a.js": "a", "chapters/01.html": "one", "chapters/02.html": "two"},
             {"index.html": "new index", "_static/a.js": "a", "_static/b.js": "b", "search.html": "search"},
             {"index.html": "third index", "_static/b.js": "b3", "search.html": "search", "notes.html": "notes"}]
    folders = []
    for i, book in enumerate(pages):
        folders.append(root / f"built-{i}")
        for name, text in book.items():
            (folders[-1] / name).parent.mkdir(parents=True, exist_ok=True)
            (folders[-1] / name).write_text(text)
    return folders


@pytest.mark.parametrize("kind", KINDS)
def test_an_html_build_stopped_at_every_step_of_its_copy_is_finished_by_the_same_command(kind, tmp_path):
    """`html` killed while it replaces its old book (once, or twice in a row with another book each
    time) leaves only files its record knows; the next build replaces them, without a word about "files that no
    book build wrote", and the folder is that book exactly. A file of the user's is still refused after a kill."""
    from albert_mini.book import html_book

    first, second, third = books(tmp_path)
    template = tmp_path / "template"
    html_book.replace_book(template, first, html_book.check_out_dir(template))

    def build(out, book):
        return lambda: html_book.replace_book(out, book, html_book.check_out_dir(out))

    def events_of(out, book):  # on a copy of `out`
        scratch = tmp_path / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(out, scratch)
        return output_events(build(scratch, book))

    events = events_of(template, second)
    assert len(events) >= 16 and "before unlink 01.html" in events and "before rmdir chapters" in events, events
    for k, event in enumerate(events):
        out = tmp_path / f"out-{k}"
        shutil.copytree(template, out)
        stopped_at(kind, k, build(out, second), f"html killed {event}")
        if k % 2:  # a second build, of another book, stopped at the same step or its last
            again = min(k, len(events_of(out, third)) - 1)
            stopped_at(kind, again, build(out, third), f"the rebuild killed at step {again} after {event}")
        (out / "notes.txt").write_text("mine")
        with pytest.raises(html_book.BookBuildError, match=r"\(notes.txt\)"):
            html_book.check_out_dir(out)
        (out / "notes.txt").unlink()
        build(out, third)()
        assert_exactly(out, folder_contents(third), "html", (kind, event))


@pytest.mark.parametrize("kind", KINDS)
def test_a_hand_out_stopped_at_every_step_is_finished_by_the_same_command_without_overwrite(kind, tmp_path,
                                                                                            monkeypatch):
    """`exercises` killed at any step of writing its hand-out (a first one, or over an earlier one) is
    finished by the same command, without --overwrite, and the folder is that hand-out exactly. A learner's file
    that --overwrite allowed to replace, but that the kill left unreplaced, still needs --overwrite."""
    from albert_mini.book.exercises import student
    from albert_mini.safe_files import OutputRecord, UnsafeWriteError

    chapter = REPO / "chapters" / "05_sentence_order_prediction.py"
    files = student.handout_files([chapter], tmp_path / "x", with_solutions=True)  # fixed bytes for every run
    # One file of each kind (the notebook, the notes and the solution, written from bytes; a figure, copied): the
    # chapter's other figures repeat the copied figure's steps, and each step is stopped three kinds of way.
    figures = sorted(t for t, (_, data) in files.items() if data is None)
    assert figures and all(files[t][1] is not None for t in files if t not in figures)
    files = {t: v for t, v in files.items() if t not in figures[1:]}
    monkeypatch.setattr(student, "handout_files", lambda chapters, out, *args: {
        out / target.relative_to(tmp_path / "x"): value for target, value in files.items()})
    expected = {target.relative_to(tmp_path / "x").as_posix(): data or source.read_bytes()
                for target, (source, data) in files.items()}
    notebook = "chapters/05_sentence_order_prediction.ipynb"
    templates = {"first": tmp_path / "first", "rerun": tmp_path / "rerun", "learner": tmp_path / "learner"}
    templates["first"].mkdir()
    (templates["learner"] / "chapters").mkdir(parents=True)
    (templates["learner"] / notebook).write_text("my answers")
    student.write_handout([chapter], templates["rerun"], with_solutions=True, say=lambda *a: None)
    (templates["rerun"] / notebook).write_bytes(b"{}")  # as an earlier version of the chapter made it
    record = OutputRecord(templates["rerun"], "exercises")
    record.add(templates["rerun"] / notebook)
    record.save()
    cases = 0
    for name, template in templates.items():
        overwrite = name == "learner"

        def write(out, overwrite=overwrite):
            return lambda: student.write_handout([chapter], out, with_solutions=True, say=lambda *a: None,
                                                 overwrite=overwrite)

        scratch = tmp_path / f"scratch-{name}"
        shutil.copytree(template, scratch)
        events = output_events(write(scratch))
        assert len(events) >= 10, events
        for k, event in enumerate(events):
            out = tmp_path / f"{name}-{k}"
            shutil.copytree(template, out)
            stopped_at(kind, k, write(out), f"exercises killed {event}")
            learners = (out / notebook).is_file() and (out / notebook).read_bytes() == b"my answers"
            if learners:
                with pytest.raises(UnsafeWriteError, match="05_sentence_order_prediction.ipynb already exists"):
                    write(out, overwrite=False)()
                assert (out / notebook).read_bytes() == b"my answers"
                cases += 1
            write(out, overwrite=learners)()
            assert_exactly(out, expected, "exercises", (kind, name, event))
    assert cases > 0  # the learner's file was met unreplaced at some stop
