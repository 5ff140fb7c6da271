"""One writer per run directory, a metrics log that survives any crash, identical bytes for identical runs."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

from albert_mini.commands.finetune import main as finetune
from albert_mini.commands.pretrain import main as pretrain
from albert_mini.training import checkpoint
from albert_mini.training.checkpoint import CheckpointError, list_checkpoints, load_checkpoint, sorted_metadata
from albert_mini.training.rundir import read_metrics
from albert_mini.training.trainer import Trainer
from cli_helpers import REPO, cli_error

SST2 = REPO / "tests" / "tasks" / "fixtures" / "tasks" / "sst2.tsv"
FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "16", "--batch-size", "2",
         "--eval-every", "0", "--eval-batches", "1", "--save-every", "1", "--keep", "3", "--log-every", "1", "--quiet"]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def train_steps(run) -> list[int]:
    return [r["step"] for r in read_metrics(run / "metrics.jsonl")[0] if r["type"] == "train"]


# ---------------------------------------------------------------------- one writer
@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_second_run_is_refused_at_once_naming_the_first_and_a_killed_run_leaves_no_lock(tmp_path, capsys):
    out = tmp_path / "run"
    long = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "16", "--batch-size", "2",
            "--eval-every", "0", "--eval-batches", "1", "--save-every", "0", "--log-every", "1", "--quiet",
            "--steps", "100000"]
    first = subprocess.Popen([sys.executable, "-m", "albert_mini", "pretrain", *long, "--out", str(out)],
                             cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"}, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while len(read_metrics(out / "metrics.jsonl")[0]) < 3:
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()[-2000:]
            time.sleep(0.2)
        started = time.monotonic()
        error = cli_error(pretrain, long + ["--out", str(out)], capsys)
        assert time.monotonic() - started < 10  # at once, before any data is built
        assert f"is in use by another run (process {first.pid})" in error and "choose a new --out" in error
    finally:
        first.send_signal(signal.SIGKILL)  # the lock goes with the process, however it ends
        first.wait()
    logged = train_steps(out)
    assert logged and not list_checkpoints(out)  # killed before its first checkpoint
    before = (out / "metrics.jsonl").read_text()
    pretrain(long + ["--out", str(out), "--minutes", "0.002"])  # the same run, resumed from nothing
    after = (out / "metrics.jsonl").read_text()
    assert after.startswith(before)  # appended, never rewritten
    first_new = json.loads(after[len(before):].lstrip("\n").splitlines()[0])
    assert (first_new["type"], first_new["step"]) == ("resume", 0)  # what the killed run logged is set aside
    steps = train_steps(out)
    assert steps == list(range(1, len(steps) + 1))  # one line per step as readers take it


# ---------------------------------------------------------------------- metrics.jsonl
def test_a_torn_last_line_and_lines_past_the_checkpoint_stay_in_the_file_and_readers_see_one_run(tmp_path):
    straight, out = tmp_path / "straight", tmp_path / "run"
    for run in (straight, out):
        pretrain(FLAGS + ["--steps", "3", "--out", str(run)])
    (out / "checkpoints" / "step-0000003").rename(out / "checkpoints" / ".tmp-gone")  # as if killed before it
    with open(out / "metrics.jsonl", "a") as f:
        f.write('{"type": "train", "step": 4, "lo')  # a kill (or a full disk) in the middle of an append
    before = (out / "metrics.jsonl").read_text()
    pretrain(FLAGS + ["--steps", "3", "--out", str(out)])
    text = (out / "metrics.jsonl").read_text()
    assert text.startswith(before + "\n")  # appended, never rewritten; the torn line ended on a line of its own
    resume = json.loads(text[len(before) + 1:].splitlines()[0])
    assert (resume["type"], resume["step"]) == ("resume", 2)
    assert train_steps(out) == train_steps(straight) == [1, 2, 3]
    assert read_metrics(out / "metrics.jsonl")[1] == 1  # the torn line, skipped
    kinds = [(r["type"], r["step"]) for r in read_metrics(out / "metrics.jsonl")[0] if r["type"] != "resume"]
    assert kinds == [(r["type"], r["step"]) for r in read_metrics(straight / "metrics.jsonl")[0]]


def test_readers_take_the_last_line_per_kind_and_step_and_drop_what_a_resume_line_sets_aside(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [{"type": "train", "step": 2, "loss": 3.0}, {"type": "train", "step": 4, "loss": 2.0},
             {"type": "eval", "step": 4, "loss": 2.5}, {"type": "train", "step": 6, "loss": 1.0},
             {"type": "resume", "step": 4}, {"type": "eval", "step": 4, "loss": 2.4},
             {"type": "train", "step": 6, "loss": 1.5}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "garbage\n")
    records, damaged = read_metrics(path)
    assert damaged == 1
    assert [(r["type"], r["step"], r.get("loss")) for r in records] == [
        ("train", 2, 3.0), ("train", 4, 2.0), ("resume", 4, None), ("eval", 4, 2.4), ("train", 6, 1.5)]


# ---------------------------------------------------------------------- damaged files
def test_a_damaged_run_json_is_named_and_overwrite_clears_it(tmp_path, capsys):
    out = tmp_path / "run"
    pretrain(FLAGS + ["--steps", "1", "--out", str(out)])
    (out / "run.json").write_text('{\n  "kind": "pretrain",\n  "setti')
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(out)], capsys)
    assert "run.json is damaged (not valid JSON)" in error and "--overwrite" in error
    assert pretrain(FLAGS + ["--steps", "1", "--out", str(out), "--overwrite"]).step == 1


def test_an_unreadable_trainer_state_never_passes_on_torchs_weights_only_advice(tmp_path):
    out = tmp_path / "run"
    pretrain(FLAGS + ["--steps", "1", "--out", str(out)])
    step = list_checkpoints(out)[-1]
    torch.save({"step": 1, "why": Exception("not a tensor")}, step / "trainer_state.pt")  # refused by weights_only
    manifest = json.loads((step / "manifest.json").read_text())
    manifest["sha256"]["trainer_state.pt"] = checkpoint.sha256_file(step / "trainer_state.pt")
    (step / "manifest.json").write_text(json.dumps(manifest))
    model = checkpoint.load_pretrained(out)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(step, model)
    assert "cannot be read safely" in str(error.value) and "weights_only" not in str(error.value)


@pytest.mark.parametrize("field", ["last_eval_step", "device"])
def test_a_checkpoint_saved_before_a_resume_field_existed_is_one_line(tmp_path, capsys, field):
    """Such a checkpoint (older albert-mini) is refused by name, not resumed with a guessed log or device."""
    out = tmp_path / "run"
    pretrain(FLAGS + ["--steps", "2", "--out", str(out)])
    *_, step, last = list_checkpoints(out)
    shutil.rmtree(last)  # as if the run had been killed after its step-1 checkpoint
    state = torch.load(step / "trainer_state.pt", weights_only=True)
    del state[field]
    torch.save(state, step / "trainer_state.pt")  # intact by its manifest: only the field is missing
    manifest = json.loads((step / "manifest.json").read_text())
    manifest["sha256"]["trainer_state.pt"] = checkpoint.sha256_file(step / "trainer_state.pt")
    (step / "manifest.json").write_text(json.dumps(manifest))
    error = cli_error(pretrain, FLAGS + ["--steps", "2", "--out", str(out)], capsys)
    assert f"does not record {field}" in error and "--overwrite" in error


def test_a_full_disk_while_writing_run_json_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    import errno

    from albert_mini import safe_files

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safe_files.os, "fsync", full)
    out = tmp_path / "run"
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(out)], capsys)
    assert error == f"error: {out / 'run.json'}: the disk is full; make room and rerun the same command\n"
    assert not list(out.iterdir())  # no half-written run.json, and no temp file


# ---------------------------------------------------------------------- identical bytes
def test_identical_runs_write_identical_checkpoint_bytes(tmp_path):
    runs = [tmp_path / name for name in ("a", "b")]
    for run in runs:
        pretrain(FLAGS + ["--steps", "2", "--out", str(run)])
    for name in ("model.safetensors", "config.json"):
        a, b = (list_checkpoints(run)[-1] / name for run in runs)
        assert a.read_bytes() == b.read_bytes(), name


def test_sorted_metadata_only_reorders_the_header():
    from safetensors.torch import load, save

    tensors = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(3)}
    metadata = {f"key{i}": str(i) for i in range(20)}
    files = {sorted_metadata(save(tensors, metadata=metadata)) for _ in range(5)}
    assert len(files) == 1
    (data,) = files
    size = int.from_bytes(data[:8], "little")
    assert list(json.loads(data[8:8 + size])["__metadata__"]) == sorted(metadata)
    assert all(torch.equal(load(data)[k], v) for k, v in tensors.items())


def test_finetune_save_is_checked_first_and_written_identically(tmp_path, capsys):
    flags = ["--format", "sst2", "--train-file", str(SST2), "--test-file", str(SST2), "--init", "random",
             "--preset", "albert-nano", "--steps", "1", "--batch-size", "2"]
    saved = [tmp_path / "a.safetensors", tmp_path / "b.safetensors"]
    for path in saved:
        assert finetune(flags + ["--save", str(path)]) == 0
    assert saved[0].read_bytes() == saved[1].read_bytes()
    error = cli_error(finetune, flags + ["--save", str(saved[0])], capsys)
    assert "already exists" in error and "--overwrite" in error


# ---------------------------------------------------------------------- a diverged run
def finite(checkpoint_dir) -> bool:
    from safetensors.torch import load_file

    return all(bool(torch.isfinite(t).all()) for t in load_file(checkpoint_dir / "model.safetensors").values())


def test_lr_1e30_is_one_line_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path, capsys):
    """A diverging run: `--lr 1e30` once exited 0 with a NaN held-out loss and a checkpoint of NaN weights."""
    out = tmp_path / "run"
    error = cli_error(pretrain, FLAGS + ["--steps", "3", "--lr", "1e30", "--warmup", "0", "--out", str(out)], capsys)
    # Step 1's gradients are finite and its checkpoint is written; its update makes step 2's NaN.
    assert "the loss diverged at step 2 (gradient norm is nan); the usual causes are a learning rate too high " \
           "(--lr 1e+30), too short a warm-up (--warmup 0)" in error, error
    assert f"the last good checkpoint, step-0000001 in {out / 'checkpoints'}, is kept" in error
    assert [p.name for p in list_checkpoints(out)] == ["step-0000001"] and finite(list_checkpoints(out)[0])
    assert train_steps(out) == [1]


def test_a_one_step_run_whose_update_diverges_writes_no_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--lr", "1e30", "--warmup", "0", "--out", str(out)], capsys)
    assert "the loss diverged at step 1 (" in error and "no checkpoint had been written yet" in error, error
    assert list_checkpoints(out) == []


class PoisonedAt(Trainer):
    """A trainer whose update of step `at` leaves a NaN in the pooler's bias (as a diverging update would)."""

    at = 2

    def train_step(self, *args, **kwargs):
        norm = super().train_step(*args, **kwargs)
        if self.step == self.at:
            with torch.no_grad():
                self.model.albert.pooler.bias[3] = float("nan")
        return norm


def poisoned_trainer(out, save_every: int, at: int = 2, steps: int = 4, val=True):
    from albert_mini import AlbertConfig, AlbertForPreTraining, SyntheticBatches, TrainConfig, WarmupPolyDecay
    from albert_mini.training.optim import build_optimizer

    config = AlbertConfig.from_preset("albert-nano")
    torch.manual_seed(0)
    model = AlbertForPreTraining(config)
    trainer = PoisonedAt(model, build_optimizer(model, "lamb", lr=1e-3), WarmupPolyDecay(1e-3, steps, 0),
                         SyntheticBatches(config.vocab_size, 2, 16, seed=1),
                         TrainConfig(max_steps=steps, save_every=save_every, log_every=100, out_dir=out and str(out),
                                     progress=False),
                         val_batches=SyntheticBatches(config.vocab_size, 2, 16, seed=2).take(1) if val else None)
    trainer.at = at
    return trainer


def test_a_checkpoint_is_never_written_with_non_finite_weights(tmp_path):
    from albert_mini.training.trainer import NonFiniteError

    trainer = poisoned_trainer(tmp_path / "run", save_every=1)
    with pytest.raises(NonFiniteError) as raised:
        trainer.train()
    assert raised.value.step == 2 and "the weights are not finite after the update: albert.pooler.bias (1 NaN)" \
        in str(raised.value)
    assert [p.name for p in list_checkpoints(tmp_path / "run")] == ["step-0000001"]  # the last good one, kept
    assert finite(list_checkpoints(tmp_path / "run")[0])


@pytest.mark.parametrize("val", [True, False], ids=["evaluated", "not-evaluated"])
def test_non_finite_weights_after_the_last_update_fail_the_run(val):
    """No step reads the last update's weights: the end of the run checks them (once), checkpoint or not."""
    from albert_mini.training.trainer import NonFiniteError

    trainer = poisoned_trainer(None, save_every=0, at=4, val=val)
    with pytest.raises(NonFiniteError) as raised:
        trainer.train()
    assert raised.value.step == 4 and "albert.pooler.bias (1 NaN)" in str(raised.value)


def test_the_weights_are_checked_at_saves_and_at_the_end_only(tmp_path, monkeypatch):
    """The checks ride on host reads that exist (the gradient norm each step, the log lines): the weights, one
    host read for all of them, only where a save copies them anyway and once at the end."""
    from albert_mini.training import trainer as trainer_module

    trainer = poisoned_trainer(tmp_path / "run", save_every=2, at=99, steps=6)
    calls = []
    real = trainer_module.non_finite_tensors
    monkeypatch.setattr(trainer_module, "non_finite_tensors", lambda state: calls.append(1) or real(state))
    trainer.train()
    assert len(calls) == 3 + 1  # checkpoints 2, 4 and 6 (the last one saved at the end), and the end of the run
