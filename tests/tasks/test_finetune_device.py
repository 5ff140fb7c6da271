"""Fine-tuning trains where FinetuneSettings.device says (albert_mini.devices: auto = CUDA, then Apple's GPU, then the
CPU), names that device in its result and in its run.json, and says so when it resumes on another device."""

from __future__ import annotations

import json

import pytest
import torch

from albert_mini import AlbertConfig
from albert_mini.devices import describe_device
from albert_mini.errors import UsageError
from albert_mini.tasks.finetuning import FinetuneSettings, run_task
from albert_mini.training.shell import checkpoints as trainer_module

NANO = AlbertConfig.from_preset("albert-nano")
TINY = dict(steps=2, batch_size=4, max_train_examples=8, max_eval_examples=8)
FAKE_GPU = "cuda: NVIDIA H100 80GB HBM3"

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_the_settings_default_to_auto_and_refuse_an_unknown_device():
    assert FinetuneSettings(steps=1, batch_size=1).device == "auto"
    with pytest.raises(UsageError, match="--device must be one of auto, cpu, cuda, mps"):
        FinetuneSettings(steps=1, batch_size=1, device="gpu")


def test_a_missing_device_is_refused_at_once(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def never(*args):
        raise AssertionError("the task was read before the device was checked")

    monkeypatch.setattr("albert_mini.tasks.finetuning.check_tokenizer", never)
    with pytest.raises(UsageError, match="--device cuda: no CUDA GPU is available here"):
        run_task("austen-mc", "random", FinetuneSettings(**TINY, device="cuda"), config=NANO)


def test_auto_resolves_with_the_one_rule(monkeypatch):
    """auto on a machine with Apple's GPU would train there: the model goes where resolve_device says."""
    moved = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)

    class Stop(Exception):
        pass

    def to(self, device):
        moved.append(torch.device(device))
        raise Stop

    monkeypatch.setattr(torch.nn.Module, "to", to)
    with pytest.raises(Stop):
        run_task("austen-mc", "random", FinetuneSettings(**TINY), config=NANO)
    assert moved == [torch.device("mps")]


def test_the_result_and_run_json_name_the_device_and_a_resume_elsewhere_is_noted(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    record = {"kind": "finetune", "settings": {"steps": 2}}  # as the command gives its flags
    settings = FinetuneSettings(**TINY, device="cpu")
    with monkeypatch.context() as patch:  # the checkpoints say a GPU computed them
        patch.setattr(trainer_module, "describe_device", lambda device: FAKE_GPU)
        run_task("austen-mc", "random", settings, config=NANO, out_dir=out, record=record)
    capsys.readouterr()
    result = run_task("austen-mc", "random", settings, config=NANO, out_dir=out, record=record)  # resumes it
    assert result["device"] == describe_device("cpu")
    note = (f"step 2: resumed on {describe_device('cpu')}; the steps up to here ran on {FAKE_GPU}, so the run is "
            "not bit-identical to one that stayed there")
    assert note in capsys.readouterr().out.splitlines()
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["device"] == describe_device("cpu") and recorded["notes"] == [note]
    assert recorded["settings"] == {"steps": 2}  # the command's record, amended, not replaced


def test_fine_tuning_from_code_settles_its_directory_as_the_command_does(tmp_path):
    """The library, not the command, checks, locks and records the run directory: a run from a notebook writes
    run.json, holds the lock while it trains, resumes when run again, and a run of other settings is refused."""
    from albert_mini.training.rundir import RunDirError, RunLock
    from albert_mini.training.trainer import Trainer

    out = tmp_path / "run"
    settings = FinetuneSettings(**TINY, device="cpu")
    held = []
    real_train = Trainer.train

    def train(self):
        with pytest.raises(RunDirError, match="in use by another run"):
            RunLock(out)
        held.append(self.step)
        return real_train(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Trainer, "train", train)
        run_task("austen-mc", "random", settings, config=NANO, out_dir=out)
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["kind"] == "finetune" and recorded["settings"]["task"] == "austen-mc"
    assert recorded["settings"]["steps"] == TINY["steps"] and "device" not in recorded["settings"]
    assert held == [0]  # the lock was held while it trained
    RunLock(out).release()  # released once the run ended
    lines = (out / "metrics.jsonl").read_text()
    run_task("austen-mc", "random", settings, config=NANO, out_dir=out)  # finished: resumed, nothing appended
    assert (out / "metrics.jsonl").read_text() == lines
    other = FinetuneSettings(**{**TINY, "lr": 1e-3}, device="cpu")
    with pytest.raises(RunDirError, match="different settings"):
        run_task("austen-mc", "random", other, config=NANO, out_dir=out)
