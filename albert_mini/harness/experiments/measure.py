"""Pretraining one model of an experiment and every measurement taken on it: held-out MLM, SOP and NSP (own head or
a linear probe), smoothness before and after, and the baselines a sentence score is read against."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import torch

from ...model.albert import AlbertForPreTraining
from ...model.config import AlbertConfig
from ...model.counting import count_parameters
from ...study.leak_probe import fit_stump
from ...study.probes import linear_probe, pooled_outputs
from ...study.smoothness import layer_smoothness
from ...tasks.scoring import bits
from ...training.run import build_model, build_trainer
from .budget import Budget
from .data import (
    held_out_batches,
    held_out_sentences,
    nsp_groups,
    probe_sentences,
    token_documents,
    training_batches,
)
from .provenance import experiment_device


def pretrain(config: AlbertConfig, task: str, budget: Budget, seed: int):
    """Pretrain `config` on the Austen training chapters with `task` beside MLM.

    Returns the trained model, a record of the run and the smoothness of the encoder it started from."""
    setup = budget.setup(task, seed)
    model = build_model(setup, config, token_documents("train", budget.max_documents))
    at_init = layer_smoothness(model.albert, held_out_batches(budget))
    model.to(experiment_device())
    start = time.perf_counter()
    trainer = build_trainer(setup, model, training_batches(task, budget, seed),
                                  val_batches=held_out_batches(budget, task))
    result = trainer.train()
    record = {"seconds": time.perf_counter() - start, "steps": result.step, "eval": result.eval,
              "curve": training_curve(result.history)}
    return model.eval(), record, at_init


def training_curve(history: list[dict], keys=("step", "loss", "mlm_acc", "sentence_acc")) -> list[dict]:
    """The training lines of a run's history, reduced to `keys`: the curve a result records."""
    return [{k: h.get(k) for k in keys} for h in history if h["type"] == "train"]


def mlm_accuracy(record: dict) -> float | None:
    """Held-out MLM accuracy at the end of a pretraining run (None when it was not evaluated)."""
    return record["eval"]["mlm_acc"] if record["eval"] else None


@dataclass(frozen=True)
class Pretraining:
    """One pretraining run of an experiment: a model, its sentence task and seed, and what to measure on it."""

    label: str
    config: AlbertConfig
    task: str
    seed: int
    nsp: bool = False  # also score NSP (a sentence_task measurement; the others need SOP only)

    def spec(self, budget: Budget) -> dict:
        """What decides the run's numbers: the cache key (the label and the measurement set are not in it)."""
        return {"kind": "pretraining", "config": self.config.to_dict(), "task": self.task, "seed": self.seed,
                "budget": budget.settings()}

    def measured(self, record: dict) -> bool:
        """Whether a cached record holds everything this run asks for."""
        return not self.nsp or "nsp" in record


def on_device(batches: list[dict], device: torch.device) -> list[dict]:
    return [{k: v.to(device) for k, v in b.items()} for b in batches]


def measure(run: Pretraining, budget: Budget) -> dict:
    """Train one model and take every measurement an experiment reads from it (on the device it trained on)."""
    model, record, at_init = pretrain(run.config, run.task, budget, run.seed)
    device = next(model.parameters()).device
    result = {"params": count_parameters(run.config), "mlm_acc": mlm_accuracy(record),
              "mlm_loss": record["eval"]["mlm_loss"] if record["eval"] else None,
              "train_seconds": record["seconds"],
              "steps": record["steps"], "curve": record["curve"],
              "sop": sentence_accuracy(model, "sop", run.task, budget, run.seed),
              "smoothness": dataclasses.asdict(layer_smoothness(model.albert,
                                                                on_device(held_out_batches(budget), device))),
              "smoothness_init": dataclasses.asdict(at_init)}
    if run.nsp:
        result["nsp"] = sentence_accuracy(model, "nsp", run.task, budget, run.seed)
    return result


def sentence_accuracy(model: AlbertForPreTraining, task: str, trained_task: str, budget: Budget, seed: int) -> dict:
    """Held-out accuracy on SOP or NSP: the model's own head if it was trained on `task`, else a linear probe."""
    test_inputs, test_y, test_instances = held_out_sentences(task, budget)
    pooled, logits = pooled_outputs(model, test_inputs)  # moved to the model's device in chunks, back on the CPU
    if task == trained_task:
        predictions, method = logits.argmax(-1), "trained head"
    else:
        train_inputs, train_y, _ = probe_sentences(task, budget)
        train_pooled, _ = pooled_outputs(model, train_inputs)
        predictions = linear_probe(train_pooled, train_y, pooled, budget.probe_steps, seed=seed)
        method = f"linear probe on frozen pooled output ({budget.probe_train} examples, {budget.probe_steps} steps)"
    correct = predictions == test_y
    result = {"accuracy": float(correct.float().mean()), "examples": len(test_y), "method": method,
              "correct": bits(correct), "answers": sorted(set(predictions.tolist()))}
    if task == "nsp":  # negatives whose B comes from another novel vs from the same novel
        for name, rows in nsp_groups(test_instances, test_y, budget).items():
            result[name] = {"accuracy": float(correct[rows].float().mean()) if rows.any() else None,
                            "examples": int(rows.sum())}
    return result


def sentence_baselines(task: str, budget: Budget) -> dict:
    """What a held-out SOP or NSP set gives without a network: the majority label, and a word-overlap stump.

    The stump thresholds the share of A's word pieces that also occur in B, fitted on the probe's training pairs:
    topic shows up as overlap, order does not (a swapped pair has the same overlap)."""
    _, test_y, test = held_out_sentences(task, budget)
    _, train_y, train = probe_sentences(task, budget)
    return pair_baselines(train, train_y, test, test_y)


def pair_baselines(train, train_y: torch.Tensor, test, test_y: torch.Tensor) -> dict:
    """The majority label and a word-overlap stump fitted on `train` pairs, scored on `test` pairs."""

    def overlap(instances):
        values = []
        for x in instances:
            a, b = set(x.tokens[1:1 + x.len_a].tolist()), set(x.tokens[2 + x.len_a:2 + x.len_a + x.len_b].tolist())
            values.append([len(a & b) / max(1, len(a))])
        return np.array(values)

    predict = fit_stump(overlap(train), train_y.numpy())
    majority = max(float(test_y.float().mean()), 1 - float(test_y.float().mean()))
    return {"majority": majority, "overlap_stump": float((predict(overlap(test)) == test_y.numpy()).mean()),
            "examples": len(test_y)}


