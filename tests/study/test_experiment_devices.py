"""The experiments train where the command's --device says (the one rule of albert_mini.devices), record that device
with each run, and never key a run on it: every run finished before the device rule existed is still found."""

from __future__ import annotations

import pytest
import torch

from albert_mini.devices import describe_device
from albert_mini.errors import UsageError
from albert_mini.harness.experiments import finetune, provenance, runs
from albert_mini.harness.experiments.budget import FULL, SEEDS
from albert_mini.harness.experiments.estimate import _pretrained_sha
from albert_mini.harness.experiments.runs import RunCache, Runner, recorded_device, run_key, without_device
from albert_mini.paths import DATA_ROOT
from albert_mini.tasks.finetuning import FinetuneSettings

COMMITTED_RUNS = DATA_ROOT / "results" / "experiment-runs"


@pytest.fixture
def device_choice():
    """Leave the experiments' device as the tests found it."""
    before = provenance.device_choice()
    yield
    provenance.use_device(before)


def test_the_command_device_is_where_experiments_train(device_choice, monkeypatch):
    assert provenance.device_choice() == "auto"  # the default: the same rule as pretraining and fine-tuning
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert provenance.experiment_device() == torch.device("mps")  # auto on a Mac
    assert provenance.use_device("cpu") == torch.device("cpu")
    assert provenance.experiment_device() == torch.device("cpu")
    assert provenance.device_name() == describe_device("cpu")


def test_the_experiments_keep_the_one_copy_of_the_cpu_name():
    from albert_mini.devices import cpu_model

    assert provenance.cpu_model is cpu_model  # re-exported for the chapters, not copied


def test_a_device_that_is_not_there_is_refused_before_anything_runs(device_choice, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    provenance.use_device("cpu")
    with pytest.raises(UsageError, match="--device cuda: no CUDA GPU is available here.*; use --device cpu"):
        provenance.use_device("cuda")
    assert provenance.device_choice() == "cpu"  # the refused one is not kept


def test_a_worker_process_trains_on_the_commands_device(device_choice):
    threads = torch.get_num_threads()
    provenance.use_device("auto")
    try:
        runs._worker_start(1, "cpu")  # what a spawned worker runs first, with the command's --device
        assert provenance.device_choice() == "cpu" and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)


def test_the_device_is_never_part_of_a_runs_key():
    settings = FinetuneSettings(steps=2, batch_size=4)
    spec = {"kind": "finetuning", "task": "polarity", "settings": {**vars(settings), "device": "cuda"}}
    assert run_key(spec) == run_key({**spec, "settings": {**vars(settings), "device": "cpu"}})
    assert run_key(spec) == run_key(without_device(spec))
    assert "device" not in without_device(spec)["settings"] and without_device(spec)["task"] == "polarity"
    assert run_key(spec) != run_key({**spec, "settings": {**vars(settings), "steps": 3}})  # settings still count


def test_fine_tuning_runs_finished_before_settings_had_a_device_are_still_found():
    """The committed fine-tuning runs were keyed without a device; their specs now carry settings.device."""
    items = finetune.plan(FULL, SEEDS)
    specs = [item.spec(_pretrained_sha()) for item in items]
    assert all(spec["settings"]["device"] == "auto" for spec in specs)
    cache = RunCache(COMMITTED_RUNS)
    assert sum(cache.load(spec) is not None for spec in specs) == len(specs) == 18


def test_records_name_devices_in_one_vocabulary(tmp_path):
    assert recorded_device({"device": "GPU: NVIDIA H100 80GB HBM3"}) == "cuda: NVIDIA H100 80GB HBM3"
    assert recorded_device({"device": "CPU: AMD EPYC 7B13"}) == "cpu: AMD EPYC 7B13"
    assert recorded_device({}) == "not recorded"
    spec = {"kind": "finetuning", "settings": {"steps": 1, "device": "cpu"}}
    cache = RunCache(tmp_path)
    cache.save(spec, {"marker": 1})
    runner = Runner(FULL, (0,), cache, say=lambda *a, **k: None)
    runner.experiment = "finetune"
    assert runner.cached({**spec, "settings": {"steps": 1, "device": "cuda"}}, lambda: {}, "x") == {"marker": 1}
    assert runner.devices["finetune"] == {provenance.device_name()}  # the device that computed it, as recorded
