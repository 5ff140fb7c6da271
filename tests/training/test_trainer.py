"""The trainer: exact resume, safe checkpoints, loss weighting, budgets, logging and the CLI."""

import errno
import json
import os
import random

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.paths import sha256_file
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    load_pretrained,
    save_checkpoint,
    set_fault_hook,
    verify_checkpoint,
)
from albert_mini.training.objectives import PretrainingObjective, pretraining_objective
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.rundir import read_metrics as read_log
from albert_mini.training.trainer import TrainConfig, Trainer, evaluate, train
from cli_helpers import cli_error

# Dropout on, so that resuming must also restore the torch RNG to be exact.
CONFIG = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
B, T = 4, 32


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


class Killed(Exception):
    """Stands in for the process dying."""


class DiesAt(SyntheticBatches):
    """A source that kills the run when asked for micro-batch `die_at`."""

    die_at = None

    def __next__(self):
        if self.index == self.die_at:
            raise Killed
        return super().__next__()


def make_trainer(out_dir, init_seed=0, source_class=SyntheticBatches, max_steps=6, accumulate=2, **config):
    torch.manual_seed(init_seed)
    model = AlbertForPreTraining(CONFIG)
    optimizer = build_optimizer(model, "lamb", lr=2e-3)
    schedule = WarmupPolyDecay(2e-3, max_steps, 2)
    source = source_class(CONFIG.vocab_size, B, T, seed=5)
    val = SyntheticBatches(CONFIG.vocab_size, B, T, seed=6).take(2)
    cfg = TrainConfig(max_steps=max_steps, accumulate=accumulate, log_every=2, eval_every=3, save_every=3,
                      out_dir=str(out_dir), **config)
    return Trainer(model, optimizer, schedule, source, cfg, val_batches=val)


def read_metrics(run_dir):
    """The log as its readers take it: the last line per kind and step, nothing a resume line sets aside."""
    return read_log(run_dir / "metrics.jsonl")[0]


def raw_lines(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_killed_and_resumed_run_is_bit_identical_to_an_uninterrupted_one(tmp_path):
    straight = make_trainer(tmp_path / "straight")
    straight.train()

    DiesAt.die_at = 8  # 2 micro-batches per step: dies in step 5, after the checkpoint of step 3
    doomed = make_trainer(tmp_path / "resumed", source_class=DiesAt)
    with pytest.raises(Killed):
        doomed.train()
    assert [p.name for p in list_checkpoints(tmp_path / "resumed")] == ["step-0000003"]

    # A new "process": other init, scrambled global RNGs, fresh optimizer and data source.
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    DiesAt.die_at = None
    resumed = make_trainer(tmp_path / "resumed", init_seed=1, source_class=DiesAt)
    assert resumed.resume() == 3
    resumed.train()

    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    for p, q in zip(straight.model.parameters(), resumed.model.parameters()):
        sa, sb = straight.optimizer.state[p], resumed.optimizer.state[q]
        assert torch.equal(sa["exp_avg"], sb["exp_avg"]) and torch.equal(sa["exp_avg_sq"], sb["exp_avg_sq"])
    # The log is appended, never rewritten: the dead run's line of step 4 stays in the file, after it the resume
    # line at step 3, and readers take the log as one run: the resumed run's lines after step 3 replace the dead run's.
    raw = [(m["type"], m["step"]) for m in raw_lines(tmp_path / "resumed")]
    assert raw[raw.index(("train", 4)):raw.index(("train", 4)) + 2] == [("train", 4), ("resume", 3)]
    lines = [m for m in read_metrics(tmp_path / "resumed") if m["type"] != "resume"]
    straight_lines = read_metrics(tmp_path / "straight")
    assert [(m["type"], m["step"]) for m in lines] == [(m["type"], m["step"]) for m in straight_lines]
    assert [m["loss"] for m in lines] == [m["loss"] for m in straight_lines]


def test_checkpoint_weights_load_into_a_fresh_model_with_the_tie_intact(tmp_path):
    trainer = make_trainer(tmp_path, max_steps=3)
    trainer.train()
    model = load_pretrained(tmp_path)
    assert model.predictions.decoder.weight is model.albert.embeddings.word_embeddings.weight
    for name, tensor in trainer.model.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name
    stored = load_file(latest_checkpoint(tmp_path) / "model.safetensors")
    assert "predictions.decoder.weight" not in stored  # tied duplicate dropped, restored on load


def test_a_checkpoint_whose_window_is_one_vector_resumes_bit_identically(tmp_path):
    """Checkpoints saved before the stats were named hold the metrics window as one vector (the stats in their
    order, then tokens): a resume reads it by those names, so such a run continues exactly, log lines included."""
    straight = make_trainer(tmp_path / "straight")
    straight.train()
    DiesAt.die_at = 8  # dies in step 5, after the checkpoint of step 3, whose window holds step 3 (logged at 4)
    with pytest.raises(Killed):
        make_trainer(tmp_path / "run", source_class=DiesAt).train()
    DiesAt.die_at = None
    step = list_checkpoints(tmp_path / "run")[-1]
    state = torch.load(step / "trainer_state.pt", weights_only=True)
    names = (*PretrainingObjective().stat_names, "tokens")
    for window in state["window"]:
        assert list(window["sums"]) == list(names) and window["grad_norms"]
        window["sums"] = torch.stack([window["sums"][k] for k in names])  # as an older version saved it
    torch.save(state, step / "trainer_state.pt")
    manifest = json.loads((step / "manifest.json").read_text())
    manifest["sha256"]["trainer_state.pt"] = sha256_file(step / "trainer_state.pt")
    (step / "manifest.json").write_text(json.dumps(manifest))
    resumed = make_trainer(tmp_path / "run", init_seed=1)
    assert resumed.resume() == 3
    resumed.train()
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    timing = ("elapsed_s", "tokens_per_s")
    ours, theirs = ([{k: v for k, v in m.items() if k not in timing} for m in read_metrics(run)
                     if m["type"] == "train"] for run in (tmp_path / "run", tmp_path / "straight"))
    assert ours == theirs  # the line of step 4 sums steps 3 and 4: the window came back by name


@pytest.mark.parametrize("name", ["model.safetensors", "trainer_state.pt"])
def test_a_truncated_checkpoint_file_is_reported_by_name(tmp_path, name):
    trainer = make_trainer(tmp_path, max_steps=3)
    trainer.train()
    path = latest_checkpoint(tmp_path)
    data = (path / name).read_bytes()
    (path / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=f"{name} is corrupt"):
        verify_checkpoint(path)
    with pytest.raises(CheckpointError, match=name):
        make_trainer(tmp_path, max_steps=3).resume()


def test_a_checkpoint_of_another_config_is_refused_naming_the_field(tmp_path):
    trainer = make_trainer(tmp_path, max_steps=3)
    trainer.train()
    deeper = AlbertForPreTraining(CONFIG.replace(num_hidden_layers=3))  # same tensor shapes, different model
    with pytest.raises(CheckpointError, match="num_hidden_layers: 2 -> 3"):
        load_checkpoint(latest_checkpoint(tmp_path), deeper)


def test_resume_refuses_a_different_schedule(tmp_path):
    make_trainer(tmp_path, max_steps=3).train()
    with pytest.raises(CheckpointError, match="schedule"):
        make_trainer(tmp_path, max_steps=4).resume()


def test_a_full_disk_during_a_save_is_reported_and_loses_nothing(tmp_path):
    trainer = make_trainer(tmp_path, max_steps=3)
    trainer.train()
    good = latest_checkpoint(tmp_path)
    before = {p.name: p.read_bytes() for p in good.iterdir()}

    def disk_full(label):
        if label == "write the second half of trainer_state.pt":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "trainer_state.pt")

    set_fault_hook(disk_full)
    trainer.step = 4
    try:
        with pytest.raises(CheckpointError, match="the disk is full.*previous checkpoint step-0000003 is intact"):
            trainer.save()
    finally:
        set_fault_hook(None)
    assert list_checkpoints(tmp_path) == [good]
    assert {p.name: p.read_bytes() for p in good.iterdir()} == before
    assert not list((tmp_path / "checkpoints").glob(".tmp-*"))  # the partial checkpoint is gone
    with pytest.raises(CheckpointError, match="never overwritten"):
        save_checkpoint(tmp_path, 3, trainer.model, {})
    trainer.save()  # the disk has room again
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-0000003", "step-0000004"]


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    make_trainer(tmp_path, max_steps=7, accumulate=1, keep_checkpoints=2).train()
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-0000006", "step-0000007"]


def test_objective_equals_the_model_loss_on_one_batch():
    torch.manual_seed(0)
    model = AlbertForPreTraining(CONFIG).eval()
    batch = SyntheticBatches(CONFIG.vocab_size, B, T, seed=2).batch(0, 0)
    out = model(**batch)
    masked = float((batch["labels"] != -100).sum())
    loss, stats = pretraining_objective(out, batch, masked, float(B))
    assert torch.allclose(loss, out.loss, rtol=1e-6)
    assert stats["mlm_count"] == masked and stats["sentence_count"] == B


def test_accumulation_gives_the_gradient_of_the_whole_batch_per_token():
    """Two micro-batches with different masked counts == one batch of both, to float rounding."""
    big = SyntheticBatches(CONFIG.vocab_size, 2 * B, T, seed=3).batch(0, 0)
    halves = [{k: v[:B] for k, v in big.items()}, {k: v[B:] for k, v in big.items()}]
    assert (halves[0]["labels"] != -100).sum() != (halves[1]["labels"] != -100).sum()
    results = []
    for batches, accumulate in (([big], 1), (halves, 2)):
        torch.manual_seed(0)
        model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
        train(model, batches, TrainConfig(max_steps=1, accumulate=accumulate, progress=False), lr=1e-3)
        results.append(model.state_dict())
    for name in results[0]:
        assert torch.allclose(results[0][name], results[1][name], rtol=0, atol=1e-6), name


def test_stops_on_exhausted_data_and_on_the_time_budget():
    torch.manual_seed(0)
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    batches = SyntheticBatches(CONFIG.vocab_size, B, T).take(3)
    result = train(model, batches, TrainConfig(max_steps=10))
    assert (result.step, result.stop_reason) == (3, "data exhausted")
    result = train(model, SyntheticBatches(CONFIG.vocab_size, B, T), TrainConfig(max_steps=10_000, max_minutes=0.002))
    # How many steps fit in 0.12 s is the machine's business: at least one, since the budget is checked between
    # steps (a step is never cut).
    assert result.stop_reason == "max_minutes" and 1 <= result.step < 10_000


def test_evaluate_counts_masked_tokens_and_sentences():
    torch.manual_seed(0)
    model = AlbertForPreTraining(CONFIG)
    val = SyntheticBatches(CONFIG.vocab_size, B, T, seed=4).take(3)
    metrics = evaluate(model, val)
    model.eval()
    correct = total = sop_correct = 0
    with torch.no_grad():
        for batch in val:
            out = model(**batch)
            targets = batch["labels"][batch["labels"] != -100]
            predicted = out.mlm_logits.argmax(-1)[out.mlm_labels != -100]  # the masked positions, row-major
            correct += int((predicted == targets).sum())
            total += targets.numel()
            sop_correct += int((out.sentence_logits.argmax(-1) == batch["sentence_order_label"]).sum())
    assert metrics["mlm_acc"] == correct / total
    assert metrics["sentence_acc"] == sop_correct / (3 * B)
    with pytest.raises(TypeError, match="re-iterable"):
        evaluate(model, iter(val))


def test_quiet_under_ci_and_clear_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CI", "true")
    torch.manual_seed(0)
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    batches = SyntheticBatches(CONFIG.vocab_size, B, T)
    train(model, batches, TrainConfig(max_steps=2, log_every=1, echo=True, progress=True))
    assert capsys.readouterr().err == "" and capsys.readouterr().out == ""
    with pytest.raises(TypeError, match="state_dict"):
        train(model, [batches.batch(0, 0)], TrainConfig(max_steps=1, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="save_every needs out_dir"):
        TrainConfig(max_steps=1, save_every=5)


def test_cli_writes_a_run_resumes_it_and_refuses_other_settings(tmp_path, capsys):
    from albert_mini.commands.pretrain import main

    out = tmp_path / "run"
    flags = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "32", "--batch-size", "4",
             "--eval-every", "2", "--eval-batches", "1", "--save-every", "2", "--quiet", "--out", str(out)]
    main(flags + ["--steps", "3"])
    run = json.loads((out / "run.json").read_text())
    assert run["effective_batch"] == 4 and run["settings"]["steps"] == 3
    assert AlbertConfig.from_json(out / "config.json") == AlbertConfig.from_preset("albert-nano")
    assert [p.name for p in list_checkpoints(out)] == ["step-0000002", "step-0000003"]
    assert main(flags + ["--steps", "3"]).step == 3  # the same command resumes (and has nothing left to do)
    assert "settings.lr: 0.00176 -> 0.001" in cli_error(main, flags + ["--steps", "3", "--lr", "1e-3"], capsys)
    main(flags + ["--steps", "2", "--overwrite"])
    assert [p.name for p in list_checkpoints(out)] == ["step-0000002"]


@pytest.mark.slow
def test_cli_on_austen_resumes_a_killed_run_bit_identically(tmp_path, monkeypatch):
    from albert_mini.commands.pretrain import main
    from albert_mini.text import batches as pretraining_data

    flags = ["--preset", "albert-nano", "--corpus", "austen", "--seq-len", "64", "--batch-size", "4", "--steps", "4",
             "--save-every", "2", "--eval-every", "0", "--eval-batches", "1", "--quiet"]
    main(flags + ["--out", str(tmp_path / "straight")])

    real_next = pretraining_data.PretrainingBatches.__next__

    def dies_in_step_4(self):
        if self.index == 3:
            raise Killed
        return real_next(self)

    monkeypatch.setattr(pretraining_data.PretrainingBatches, "__next__", dies_in_step_4)
    with pytest.raises(Killed):
        main(flags + ["--out", str(tmp_path / "resumed")])
    monkeypatch.undo()
    assert [p.name for p in list_checkpoints(tmp_path / "resumed")] == ["step-0000002"]
    main(flags + ["--out", str(tmp_path / "resumed")])
    a = load_file(latest_checkpoint(tmp_path / "straight") / "model.safetensors")
    b = load_file(latest_checkpoint(tmp_path / "resumed") / "model.safetensors")
    assert latest_checkpoint(tmp_path / "resumed").name == "step-0000004"
    for name in a:
        assert torch.equal(a[name], b[name]), name
    run = json.loads((tmp_path / "straight" / "run.json").read_text())
    assert run["tokenizer"]["path"].endswith("spiece.model") and len(run["tokenizer"]["sha256"]) == 64


def test_every_cli_flag_is_explained():
    from albert_mini.commands.pretrain import build_parser

    parser = build_parser()
    for action in parser._actions:
        assert action.help and len(action.help) > 10, action.option_strings
    assert "x world size x --accumulate" in parser.format_help()


# ---------------------------------------------------------------------- the pretraining model
def test_the_pretraining_model_starts_the_output_bias_at_the_unigram_prior_and_freezes_unused_heads():
    from albert_mini.text.batches import unigram_log_prior
    from albert_mini.training.pretraining_model import build_pretraining_model

    documents = [[[5, 6, 6], [7]], [[6, 8]]]
    model = build_pretraining_model(CONFIG, "sop", documents, seed=3)
    assert torch.allclose(model.predictions.bias, unigram_log_prior(documents, CONFIG.vocab_size))
    assert all(p.requires_grad for p in model.parameters())
    torch.manual_seed(3)
    plain = AlbertForPreTraining(CONFIG)
    assert torch.equal(model.albert.embeddings.word_embeddings.weight, plain.albert.embeddings.word_embeddings.weight)
    mlm_only = build_pretraining_model(CONFIG, "none", output_bias="zeros", seed=3)
    frozen = {name for name, p in mlm_only.named_parameters() if not p.requires_grad}
    assert frozen == {"albert.pooler.weight", "albert.pooler.bias", "sop_classifier.classifier.weight",
                      "sop_classifier.classifier.bias"}
    assert not mlm_only.predictions.bias.any()
    with pytest.raises(ValueError, match="needs train_documents"):
        build_pretraining_model(CONFIG, "sop")
    with pytest.raises(ValueError, match="unknown task 'mlm'"):
        build_pretraining_model(CONFIG, "mlm", output_bias="zeros")
