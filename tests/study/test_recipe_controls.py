"""Positive controls of the sentence path: it fits a small fixed set of SOP pairs, it learns a label
that is certainly learnable, and the trainer reports the sentence loss and accuracy together so that a loss
below ln 2 at chance accuracy (a label bug) is caught. Each runs on albert-nano in seconds."""

from __future__ import annotations

import json
import math

import pytest
import torch

from albert_mini.harness.research.recipe_search import (
    build_model,
    dataset,
    held_out,
    nano_recipe,
    run_control,
    run_probe,
)
from albert_mini.study.collapse import relabel, segment_lengths
from albert_mini.text.batches import PretrainingBatches
from albert_mini.training.objectives import PretrainingObjective, sentence_metrics_warning
from albert_mini.training.trainer import TrainConfig, evaluate, train

FEW = 10  # chapters of each split: enough pairs for these controls, quick to tokenize


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def quiet(_line):
    pass


@pytest.mark.slow
def test_sop_path_fits_a_fixed_set_of_pairs():
    # 128 real SOP pairs revisited: labels, pooler, head and loss wired right means the network can memorise them.
    recipe = nano_recipe(seq_len=64, warmup=10, optimizer="adamw", lr=1e-3, betas=(0.9, 0.98))
    record = run_control("fit", recipe, steps=80, rule="sop", every=80, train_pairs=128, max_documents=FEW,
                         held_out_batches=1, say=quiet)
    first, last = record["log"][0], record["log"][-1]
    assert first["fit_acc"] < 0.7  # it starts near chance ...
    assert last["fit_acc"] >= 0.95  # ... and fits the pairs it trains on
    assert last["fit_loss"] < 0.5  # well below ln 2 = 0.693


@pytest.mark.slow
def test_learnable_label_is_learned():
    # Label = segment A longer than B: visible through the segment ids, so the head must get it from fresh pairs.
    recipe = nano_recipe(seq_len=64, warmup=10, optimizer="adamw", lr=1e-3, betas=(0.9, 0.98))
    record = run_control("longer", recipe, steps=60, rule="longer", every=60, max_documents=FEW,
                         held_out_batches=2, say=quiet)
    checks = [row for row in record["log"] if "held_out_acc" in row]
    assert checks[0]["held_out_acc"] < 0.7
    assert checks[-1]["held_out_acc"] >= 0.9


def test_relabel_marks_the_longer_first_segment():
    batch = held_out(nano_recipe(seq_len=64), batches=1, max_documents=FEW)[0]
    len_a, len_b = segment_lengths(batch)
    assert int(len_a.sum() + len_b.sum() + 3 * len(len_a)) == int(batch["attention_mask"].sum())
    assert torch.equal(relabel(batch)["sentence_order_label"], (len_a > len_b).long())
    with pytest.raises(ValueError, match="unknown control rule"):
        relabel(batch, "shorter")


class RolledAccuracy(PretrainingObjective):
    """A deliberately broken objective: the loss sees the right labels, the accuracy those of the next row."""

    def __call__(self, out, batch, denominators):
        loss, stats = super().__call__(out, batch, denominators)
        rolled = batch["sentence_order_label"].roll(1)
        stats["sentence_correct"] = (out.sentence_logits.argmax(-1) == rolled).sum().double()
        return loss, stats


@pytest.mark.slow
def test_trainer_logs_sentence_loss_and_accuracy_together():
    recipe = nano_recipe(seq_len=64, warmup=5)
    model = build_model(recipe)
    source = PretrainingBatches(dataset("train", recipe, "sop", 0, dynamic=True, max_documents=FEW), 32)
    val = [relabel(b) for b in held_out(recipe, batches=2, max_documents=FEW)]
    result = train(model, (relabel(b) for b in source), TrainConfig(max_steps=60, log_every=20, progress=False),
                   optimizer="adamw", lr=1e-3, warmup_steps=5)
    lines = [h for h in result.history if h["type"] == "train"]
    assert len(lines) == 3 and all("sentence_loss" in h and "sentence_acc" in h for h in lines)
    honest = evaluate(model, val)
    assert honest["sentence_loss"] < 0.4 and honest["sentence_acc"] > 0.85
    assert sentence_metrics_warning(honest) is None
    broken = evaluate(model, val, objective=RolledAccuracy())
    assert broken["sentence_loss"] == pytest.approx(honest["sentence_loss"])
    assert abs(broken["sentence_acc"] - 0.5) < 0.1  # the accuracy no longer matches the loss ...
    assert "same labels" in sentence_metrics_warning(broken)  # ... and the check says so


def test_sentence_warning_flags_loss_below_ln2_at_chance():
    assert sentence_metrics_warning({"sentence_loss": 0.60, "sentence_acc": 0.51, "sentence_count": 320}) is not None
    assert sentence_metrics_warning({"sentence_loss": 0.60, "sentence_acc": 0.70, "sentence_count": 320}) is None
    assert sentence_metrics_warning({"sentence_loss": math.log(2), "sentence_acc": 0.50, "sentence_count": 320}) is None
    assert sentence_metrics_warning({"mlm_loss": 5.0}) is None


@pytest.mark.slow
def test_probe_record_scores_both_lengths(tmp_path):
    recipe = nano_recipe(seq_len=64, warmup=2)
    record = run_probe("smoke", recipe, tokens=8 * 32 * 64, out_dir=tmp_path, eval_points=2, say=quiet,
                       command="albert-mini recipe-search probe smoke")
    assert record["steps"] == 8 and len(record["curve"]) == 2
    assert record["curve"][-1]["step"] == 8 and record["tokens"] <= 8 * 32 * 64
    point = record["curve"][-1]
    assert set(point["held_out_by_len"]) == {"64", "128"} and point["held_out"] == point["held_out_by_len"]["64"]
    assert len(point["diag"]["entropy"]) == 2 and point["sentence_warning"] is None
    written = json.loads((tmp_path / "smoke.json").read_text())
    assert written["held_out_mlm"] == record["held_out_mlm"]
    assert written["command"] == "albert-mini recipe-search probe smoke" and written["git_revision"]


def test_reference_style_pairs_batch_with_their_labels_and_lengths():
    from albert_mini.harness.research.leak_control import pair_batches, split_documents
    from albert_mini.study.leak_probe import reference_style_instances

    instances = reference_style_instances(split_documents(("train",), max_documents=3), 64, seed=0)
    batches = pair_batches(instances, batch_size=8, seed=0)
    assert len(batches) == len(instances) // 8
    order = pair_batches(instances, batch_size=8, seed=0)
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(batches, order))  # seeded
    from albert_mini.harness.research.leak_control import held_out_order
    labels = torch.cat([b["sentence_order_label"] for b in batches])  # the order the per-pair scores come in
    assert labels.tolist() == [instances[i].label for i in held_out_order(len(instances), 8)]
    by_tokens = {tuple(i.tokens.tolist()): i for i in instances}
    for batch in batches:
        for ids, types, mask, label in zip(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                           batch["sentence_order_label"]):
            inst = by_tokens[tuple(ids[mask.bool()].tolist())]
            assert int(label) == inst.label and int(mask.sum()) == len(inst.tokens)
            assert torch.equal(types[mask.bool()], torch.as_tensor(inst.token_type_ids, dtype=types.dtype))


def test_leak_control_scores_the_network_the_surface_probe_and_the_constant_answer_on_one_set():
    from albert_mini.harness.research.leak_control import run_leak_control

    record = run_leak_control(nano_recipe(seq_len=64, warmup=1), steps=2, every=1, max_documents=FEW, say=quiet,
                              command="albert-mini leak-control --nano --steps 2")
    assert record["command"] == "albert-mini leak-control --nano --steps 2" and record["git_revision"]
    share = record["label_1_share"]
    constant = record["constant_answer"]
    assert constant["total"] == record["surface_probe"]["total"] == record["held_out_pairs"]
    assert constant["accuracy"] == pytest.approx(max(share, 1 - share), abs=1 / constant["total"])
    assert record["network"]["total"] % 64 == 0 and record["network"]["total"] <= record["held_out_pairs"]
    assert [row["step"] for row in record["log"]] == [1, 2] and "held_out_acc" in record["log"][-1]
    low, high = record["network"]["interval"]
    assert low <= record["network"]["accuracy"] <= high
    for c in record["network_vs"].values():  # paired on the same pairs: the difference is the discordant balance
        assert c["bootstrap"]["difference"] == pytest.approx((c["only_a"] - c["only_b"]) / record["network"]["total"])
        assert 0 <= c["mcnemar_p"] <= 1
