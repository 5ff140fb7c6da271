"""Pretraining's --device (one rule, albert_mini.devices) and --config KEY=VALUE (model fields on top of --preset):
run.json records the device used and the model built, a resumption on another device is said and noted, and the
trainer keeps its float64 metric sums on the CPU whatever the model's device (MPS has no float64)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.commands.pretrain import build_parser
from albert_mini.commands.pretrain import main as pretrain
from albert_mini.devices import describe_device
from albert_mini.errors import UsageError
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.checkpoint import latest_checkpoint, load_pretrained
from albert_mini.training.distributed import DistInfo
from albert_mini.training.objectives import as_stat
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.setup import PretrainingSetup, canonical_config, defaults
from albert_mini.training.shell import checkpoints as checkpoints_module
from albert_mini.training.trainer import TrainConfig, Trainer, evaluate
from cli_helpers import cli_error

FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "16", "--batch-size", "2",
         "--eval-every", "0", "--eval-batches", "1", "--save-every", "1", "--keep", "3", "--quiet"]
CPU = describe_device("cpu")
FAKE_GPU = "cuda: NVIDIA H100 80GB HBM3"

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def record(out) -> dict:
    return json.loads((out / "run.json").read_text())


def metrics(out) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------------- --device
def test_run_json_records_the_device_used(tmp_path):
    out = tmp_path / "run"
    pretrain(FLAGS + ["--steps", "1", "--out", str(out), "--device", "cpu"])
    assert record(out)["device"] == CPU
    assert "device" not in record(out)["settings"]  # free on resume: where, not what, is computed


def test_a_missing_device_is_refused_in_one_line_before_anything_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(tmp_path / "run"), "--device", "cuda"], capsys)
    assert "--device cuda: no CUDA GPU is available here" in error and "use --device cpu, or --device auto" in error
    assert not (tmp_path / "run").exists()


def test_a_run_resumed_on_another_device_says_so_and_notes_it_in_run_json(tmp_path, capsys, monkeypatch):
    """Fake the first device: the checkpoints of steps 1-4 say a GPU computed them; steps 3-4 are then lost (their
    checkpoints deleted) and the run resumes from step 2 on this CPU."""
    out = tmp_path / "run"
    flags = FLAGS + ["--steps", "4", "--out", str(out)]
    with monkeypatch.context() as patch:
        patch.setattr(checkpoints_module, "describe_device", lambda device: FAKE_GPU)
        pretrain(flags)
    for step in (3, 4):
        shutil.rmtree(out / "checkpoints" / f"step-{step:07d}")
    capsys.readouterr()
    assert pretrain(flags + ["--device", "cpu"]).step == 4  # another --device is no other run
    said = [line for line in capsys.readouterr().out.splitlines() if FAKE_GPU in line]
    assert said == [f"step 2: resumed on {CPU}; the steps up to here ran on {FAKE_GPU}, so the run is not "
                    "bit-identical to one that stayed there"]
    assert record(out)["notes"] == said and record(out)["device"] == CPU
    resumed = [m for m in metrics(out) if m["type"] == "resume"]
    assert resumed == [{"type": "resume", "step": 2, "checkpoint": str(out / "checkpoints" / "step-0000002"),
                        "device": CPU, "previous_device": FAKE_GPU}]

    # Steps 3 and 4 were computed here: resuming again on this CPU says nothing new and keeps the note.
    capsys.readouterr()
    pretrain(flags)
    assert FAKE_GPU not in capsys.readouterr().out
    assert record(out)["notes"] == said
    assert [m for m in metrics(out) if m["type"] == "resume"] == resumed  # finished: a rerun appends no line


# ---------------------------------------------------------------------- --config
def test_config_sets_model_fields_and_config_json_and_run_json_say_so(tmp_path):
    out = tmp_path / "run"
    pretrain(FLAGS + ["--steps", "1", "--out", str(out), "--config", "embedding_size=16"])
    assert json.loads((out / "config.json").read_text())["embedding_size"] == 16
    assert record(out)["model"]["embedding_size"] == 16 and record(out)["settings"]["config"] == ["embedding_size=16"]
    model = load_pretrained(latest_checkpoint(out))
    assert model.config.embedding_size == 16
    assert model.albert.embeddings.word_embeddings.weight.shape == (8000, 16)
    assert model.config.hidden_size == AlbertConfig.from_preset("albert-nano").hidden_size  # the rest: the preset


def test_config_may_not_change_on_resume(tmp_path, capsys):
    out = tmp_path / "run"
    flags = FLAGS + ["--steps", "1", "--out", str(out)]
    pretrain(flags + ["--config", "embedding_size=16"])
    error = cli_error(pretrain, flags + ["--config", "embedding_size=24"], capsys)
    assert "settings.config: ['embedding_size=16'] -> ['embedding_size=24']" in error
    assert "model.embedding_size: 16 -> 24" in error
    error = cli_error(pretrain, flags, capsys)  # dropping it changes the model too
    assert "settings.config: ['embedding_size=16'] -> []" in error


@pytest.mark.parametrize("given, message", [
    (["embeding_size=16"], "--config embeding_size: the model config has no such field; valid keys: vocab_size, "
                           "embedding_size, hidden_size"),
    (["embedding_size=sixteen"], "--config embedding_size=sixteen: embedding_size is a whole number"),
    (["embedding_size"], "--config takes key=value, e.g. --config embedding_size=64; got 'embedding_size'"),
    (["sharing=none"], "--config sharing=none: sharing='none' means"),
    (["hidden_dropout_prob=1.5"], "hidden_dropout_prob must be in [0, 1)"),
    (["embedding_projection=maybe"], "embedding_projection is true or false"),
    (["embedding_size=16", "embedding_size=32"], "--config embedding_size is given twice"),
    (["max_position_embeddings=12"], "--seq-len must be in [8, 12] for albert-nano with --config"),
])
def test_a_config_that_cannot_work_is_refused_in_one_line(tmp_path, capsys, given, message):
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(tmp_path / "run"), "--config", *given], capsys)
    assert message in error
    assert not (tmp_path / "run").exists()


def test_vocab_size_is_the_tokenizers_with_text():
    with pytest.raises(UsageError, match="--config vocab_size: with a text corpus the tokenizer decides"):
        PretrainingSetup(steps=1, out="r", config=("vocab_size=100",))
    assert PretrainingSetup(steps=1, out="r", corpus="synthetic", config=("vocab_size=100",)).model_config(
    ).vocab_size == 100


def test_config_and_device_flags_and_setup_convert_both_ways():
    parser = build_parser()
    args = parser.parse_args(["--steps", "5", "--out", "r", "--config", "num_hidden_layers=4",
                              "--config", "embedding_projection=True", "embedding_size=64", "--device", "cpu"])
    setup = PretrainingSetup.from_args(args)
    # One spelling, in the config's field order, however typed: a run resumes with its flags in any order.
    assert setup.config == ("embedding_size=64", "num_hidden_layers=4", "embedding_projection=true")
    assert setup.config == canonical_config(["num_hidden_layers=4", "embedding_size=64", "embedding_projection=1"])
    assert PretrainingSetup.from_args(parser.parse_args(setup.to_argv())) == setup
    assert setup.model_config().num_hidden_layers == 4 and setup.device == "cpu"
    assert parser.parse_args(["--steps", "5", "--out", "r"]).config == ()
    assert PretrainingSetup(steps=5, out="r").settings()["config"] == defaults()["config"] == []  # recorded, as given


# ---------------------------------------------------------------------- metric sums on the CPU
def tiny_trainer(dist: DistInfo | None = None) -> Trainer:
    torch.manual_seed(0)
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    source = SyntheticBatches(8000, 2, 16, seed=1)
    return Trainer(model, build_optimizer(model, "lamb", lr=1e-3), WarmupPolyDecay(1e-3, 2, 0), source,
                   TrainConfig(max_steps=2, log_every=1, progress=False), dist=dist)


def test_metric_sums_stay_float64_on_the_cpu_even_when_the_process_names_a_gpu():
    """A process on Apple's GPU (faked: the DistInfo says mps, the model stays on the CPU) must never send its float64
    sums to that device; one process reduces nothing, so they stay on the CPU."""
    trainer = tiny_trainer(DistInfo(device=torch.device("mps")))
    result = trainer.train()
    assert result.step == 2 and result.train["mlm_loss"] > 0
    assert {(s.device.type, s.dtype) for s in trainer._sums.values()} == {("cpu", torch.float64)}
    held_out = [SyntheticBatches(8000, 2, 16, seed=2).batch(0, 0)]
    assert evaluate(trainer.model, held_out, DistInfo(device=torch.device("mps")))["mlm_loss"] > 0


def test_the_numbers_are_those_of_a_trainer_on_the_cpu():
    """Where the sums are kept changes no number: the same losses as a plain CPU process."""
    cpu = tiny_trainer().train().history
    named = tiny_trainer(DistInfo(device=torch.device("mps"))).train().history
    keep = ("mlm_loss", "mlm_acc", "sentence_loss", "sentence_acc", "loss", "grad_norm", "tokens_seen")
    assert [{k: m[k] for k in keep} for m in named] == [{k: m[k] for k in keep} for m in cpu]


def test_a_steps_stats_move_to_the_cpu_as_float64():
    """A named stat is a 0-d float64 tensor, on the CPU for a device without float64 (MPS)."""
    moved = as_stat(torch.tensor(1.5, dtype=torch.float32), torch.device("mps"))
    assert (moved.device.type, moved.dtype, moved.item()) == ("cpu", torch.float64, 1.5)
    assert as_stat(3, torch.device("cpu")).dtype == torch.float64
    already = torch.tensor(1.0, dtype=torch.float64)
    kept = as_stat(already, torch.device("cpu"))  # on the CPU already: the same memory, so CPU runs are bit-identical
    assert kept.data_ptr() == already.data_ptr() and kept.dtype == torch.float64
