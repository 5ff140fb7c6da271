"""Table 5 from one trunk at the edge of SOP's escape, and the same three rows trained from scratch.

The trunk is the classroom recipe (albert-mini, MLM + SOP, LAMB at 5e-3, 125 warm-up steps, a 5,000-step schedule
of 64 x 64-token batches then 32 x 128) stopped at step 3,000, with the whole checkpoint kept: weights, LAMB's
moments and the step. At that point the classroom run had trained about 192k SOP pairs and its SOP was still at
chance; it left chance near step 3,600. Each branch continues the trunk's optimizer and schedule for a few
thousand steps more with one sentence task: SOP, NSP, or none (MLM only on the same SOP-layout pairs, the sentence
loss off and the sentence head frozen). A branch gets a fresh classifier and keeps the trunk's pooler. So the
branches differ only in the sentence loss of their last steps, and all of them inherit the trunk's SOP exposure.

Every model is scored the same way, on the same examples: a frozen linear probe on the pooled [CLS] output (the
primary score) and one on the mean of the last layer, both fitted on the same training pairs and scored on every
validation and test pair, at 64 and at 128 tokens, on unmasked pairs and on pairs masked as in training; beside
them each model's own trained head; MLM on the same masked held-out tokens.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...model.albert import AlbertForPreTraining
from ...model.config import AlbertConfig
from ...safe_files import atomic_write_text
from ...specials import IGNORE_INDEX
from ...study.probes import linear_probe, pair_features
from ...tasks.finetuning import run_task
from ...text.batches import stream_rng
from ...text.masking import Masker
from ...text.padding import pad_batch
from ...text.tokenizer import Tokenizer
from ...training.checkpoint import checkpoint_dir, load_checkpoint
from ...training.pretraining_model import train_sentence_head
from ...training.run import build_model, build_trainer
from ...training.run_data import training_batches, validation_batches
from ...training.rundir import METRICS_FILE, read_metrics
from ...training.setup import Phase, PretrainingSetup, in_process
from .budget import check_recorded
from .data import HELD_OUT_SEED, pair_set, token_documents
from .measure import bits, training_curve
from .provenance import experiment_device

TRUNK_SEED = 0
PAIR_SEED = 11  # the held-out SOP / NSP pairs
PROBE_SEED = 12  # the training pairs a probe is fitted on
MASK_SEED = 13  # the masks of the "masked" pair sets
BRANCH_DATA_SEED = 1000  # a branch of seed s reads data seed 1000 + s: not the trunk's own batches again
LENGTHS = (64, 128)  # every model is scored at both: the recipe's short length and the book's length
ROWS = ("none", "nsp", "sop")  # one row per row of the paper's Table 5


# The classroom recipe as overrides of PretrainingSetup: 5,000 LAMB steps at 5e-3 after 125 warm-up steps, 64 x 64
# tokens then 32 x 128 (BERT's curriculum, 90% short); the trunk is scored on 20 held-out MLM batches of 32 sequences
# at each length. Only settings a trunk's spec records (TrunkPlan.settings) may be set here: they are its cache key.
CLASSROOM = {"steps": 5000, "lr": 5e-3, "warmup": 125, "short_seq_len": 64, "eval_batches": 20}
TRUNK_OVERRIDABLE = ("steps", "lr", "warmup", "seq_len", "batch_size", "short_seq_len", "short_fraction",
                     "eval_batches")


@dataclass(frozen=True)
class TrunkPlan:
    """The classroom recipe (`pretraining`), stopped at `stop` of its schedule (the checkpoint kept), and scored."""

    pretraining: dict = field(default_factory=lambda: dict(CLASSROOM), hash=False)  # PretrainingSetup overrides
    stop: int = 3000
    fallback_stop: int = 2500  # the branch point if the trunk's SOP has already left chance at `stop`
    probe_at: tuple[int, ...] = (1000, 2000, 2500, 3000)  # steps at which the trunk is scored
    probe_train: int = 4096  # training pairs a linear probe is fitted on
    probe_steps: int = 300
    held_out: int | None = None  # held-out pairs scored (None: every validation and test pair)
    max_documents: int | None = None  # only the first chapters of each split (fast mode)

    def __post_init__(self):
        check_recorded("a trunk plan", self.pretraining, TRUNK_OVERRIDABLE)

    def setup(self, row: str = "sop", seed: int = TRUNK_SEED) -> PretrainingSetup:
        """A row on this recipe: MLM + SOP or NSP, or MLM only on SOP-layout pairs with the sentence loss off."""
        return in_process(task="sop" if row == "none" else row, sentence_weight=0.0 if row == "none" else 1.0,
                          seed=seed, log_every=max(1, self.pretraining["steps"] // 100), **self.pretraining)

    def settings(self) -> dict:
        """What a trunk's, branch's or scratch row's spec records of the plan (the cache key), under the names and
        in the order of the finished runs."""
        s = self.setup()
        return {"schedule_steps": s.steps, "stop": self.stop, "fallback_stop": self.fallback_stop,
                "probe_at": self.probe_at, "lr": s.lr, "warmup": s.warmup, "seq_len": s.seq_len,
                "batch_size": s.batch_size, "short_seq_len": s.short_seq_len, "short_fraction": s.short_fraction,
                "eval_batches": s.eval_batches, "probe_train": self.probe_train, "probe_steps": self.probe_steps,
                "held_out": self.held_out, "max_documents": self.max_documents}

    def tokens_until(self, step: int) -> int:
        """Training tokens of the recipe's first `step` steps."""
        tokens, left = 0, step
        for phase in self.setup().phases():
            taken = min(left, phase.steps)
            tokens, left = tokens + taken * phase.seq_len * phase.batch_size, left - taken
        return tokens


@dataclass(frozen=True)
class BranchPlan:
    """A branch: `short_steps` more steps of the recipe's short batches, then `long_steps` of 32 x 128."""

    short_steps: int = 1250  # 64 x 64 tokens a step: 5.1M tokens, 80k pairs
    long_steps: int = 250  # so that every branch is scored at 128 tokens too
    lengthened: int = 1750  # the short phase if the seed-0 SOP branch stays below MIN_PILOT_SOP at `short_steps`

    def phases(self, trunk: TrunkPlan) -> tuple[Phase, Phase]:
        short, long = trunk.setup().phases()
        return Phase(self.short_steps, short.seq_len, short.batch_size), Phase(self.long_steps, long.seq_len,
                                                                               long.batch_size)


FULL_TRUNK, FULL_BRANCH = TrunkPlan(), BranchPlan()
FAST_TRUNK = TrunkPlan({**CLASSROOM, "steps": 20, "warmup": 1, "batch_size": 4, "eval_batches": 1}, stop=6,
                       fallback_stop=4, probe_at=(4, 6), probe_train=32, probe_steps=5, held_out=48, max_documents=6)
FAST_BRANCH = BranchPlan(short_steps=2, long_steps=2, lengthened=3)


def trunk_config() -> AlbertConfig:
    return AlbertConfig.from_preset("albert-mini")


def own_task(row: str) -> str | None:
    """The sentence task a row's head trained on (none for the MLM-only row)."""
    return None if row == "none" else row


# ---------------------------------------------------------------------------------------------- data
@functools.cache
def held_out_mlm(seq_len: int, count: int, max_documents: int | None) -> list[dict]:
    """Masked held-out batches (validation chapters, SOP layout, masked once): every model is scored on these."""
    setup = PretrainingSetup(task="sop", seed=HELD_OUT_SEED, steps=1, seq_len=seq_len, batch_size=32)
    return validation_batches(setup, token_documents("validation", max_documents), Tokenizer.default(),
                                    count=count)


@functools.cache
def scored_pairs(task: str, which: str, seq_len: int, masked: bool, plan: TrunkPlan):
    """(inputs, labels, instances): every validation and test pair ("held_out") or the probe's training pairs
    ("probe"), unmasked or masked as in training (15%, n-grams, 80/10/10; seeded, so the same for every model)."""
    if which == "held_out":
        inputs, labels, instances = pair_set(task, ("validation", "test"), seq_len, plan.held_out, PAIR_SEED,
                                             plan.max_documents)
    else:
        inputs, labels, instances = pair_set(task, ("train",), seq_len, plan.probe_train, PROBE_SEED,
                                             plan.max_documents)
    if masked:
        masker = Masker.from_tokenizer(Tokenizer.default())
        ids = [masker(x.tokens, stream_rng(MASK_SEED, seq_len, i)).input_ids for i, x in enumerate(instances)]
        inputs = pad_batch({"input_ids": ids, "token_type_ids": [x.token_type_ids for x in instances]})
    return inputs, labels, instances


# ---------------------------------------------------------------------------------------------- scores
@torch.no_grad()
def mlm_scores(model: AlbertForPreTraining, held_out: list[dict]) -> dict:
    """Held-out MLM loss and accuracy over the same masked tokens, and accuracy by position (first half / rest)."""
    model.eval()
    device = next(model.parameters()).device
    loss = correct = count = 0.0
    half = held_out[0]["input_ids"].shape[1] // 2
    by_half = np.zeros((2, 2))  # (first half, second half) x (correct, count)
    for batch in held_out:
        batch = {k: v.to(device) for k, v in batch.items() if k != "sentence_order_label"}
        out = model(**batch)
        labels = batch["labels"]
        where = (labels != IGNORE_INDEX).nonzero()  # (N, 2), row-major like the masked rows of out.mlm_logits
        scored = out.mlm_labels != IGNORE_INDEX  # (B, P): the masked positions, then padding
        right = (out.mlm_logits.argmax(-1) == out.mlm_labels)[scored]  # (N,)
        loss += float(out.mlm_loss_sum)
        correct += float(right.sum())
        count += len(right)
        second = where[:, 1] >= half
        for part, rows in enumerate((~second, second)):
            by_half[part] += (float(right[rows].sum()), float(rows.sum()))
    return {"loss": loss / count, "acc": correct / count, "tokens": int(count),
            "acc_first_half": by_half[0, 0] / max(by_half[0, 1], 1),
            "acc_second_half": by_half[1, 0] / max(by_half[1, 1], 1)}


def graded(predictions: torch.Tensor, labels: torch.Tensor) -> dict:
    """Accuracy, per-pair correctness (for paired tests) and the answers given (one answer: a constant head)."""
    correct = predictions == labels
    return {"accuracy": float(correct.float().mean()), "correct": bits(correct),
            "answers": sorted(set(predictions.tolist()))}


def sentence_scores(model: AlbertForPreTraining, plan: TrunkPlan, trained_task: str | None, seed: int,
                    seq_len: int) -> dict:
    """SOP and NSP at one length, unmasked and masked: probes on the pooled and mean outputs, and the own head."""
    model.eval()
    out = {}
    for task in ("sop", "nsp"):
        for masked in (False, True):
            test_x, test_y, _ = scored_pairs(task, "held_out", seq_len, masked, plan)
            train_x, train_y, _ = scored_pairs(task, "probe", seq_len, masked, plan)
            test, train = pair_features(model, test_x), pair_features(model, train_x)
            entry = {"examples": len(test_y), "label_share": float(test_y.float().mean())}
            for pooling in ("pooled", "mean"):
                predictions = linear_probe(train[pooling], train_y, test[pooling], plan.probe_steps, seed=seed)
                entry[f"probe_{pooling}"] = graded(predictions, test_y)
            if task == trained_task:
                entry["head"] = graded(test["logits"].argmax(-1), test_y)
            out[f"{task}_{'masked' if masked else 'unmasked'}"] = entry
    return out


def score_point(model: AlbertForPreTraining, plan: TrunkPlan, trained_task: str | None, seed: int,
                lengths=LENGTHS) -> dict:
    """Everything a row of Table 5 reads at one moment: MLM and both sentence tasks at each length."""
    out = {}
    for T in lengths:
        out[f"mlm_{T}"] = mlm_scores(model, held_out_mlm(T, plan.setup().eval_batches, plan.max_documents))
        out[f"sentence_{T}"] = sentence_scores(model, plan, trained_task, seed, T)
    return out


def curve(history: list[dict]) -> list[dict]:
    return training_curve(history, ("step", "loss", "mlm_acc", "sentence_acc", "lr", "tokens_per_s"))


# ---------------------------------------------------------------------------------------------- the trunk
PROBES_FILE = "probes.json"


def train_trunk(plan: TrunkPlan, folder: Path) -> dict:
    """Train the recipe to plan.stop in `folder` (checkpoints kept, resumed if there), scoring at plan.probe_at."""
    folder = Path(folder)
    setup = plan.setup().replace(out=str(folder))
    documents = token_documents("train", plan.max_documents)
    model = build_model(setup, trunk_config(), documents).to(experiment_device())
    trainer = build_trainer(setup, model, training_batches(setup, documents, Tokenizer.default()))
    trainer.resume()  # continues from the newest checkpoint in `folder`, if any
    probes_path = folder / PROBES_FILE
    probes = json.loads(probes_path.read_text()) if probes_path.exists() else []
    probes = [p for p in probes if p["step"] <= trainer.step]
    start = time.perf_counter()
    for stop in plan.probe_at:
        if stop <= trainer.step:
            continue
        trainer.config = dataclasses.replace(trainer.config, max_steps=stop)
        trainer.train()  # ends with a checkpoint of step `stop`
        probes.append({"step": stop, "tokens": plan.tokens_until(stop),
                       **score_point(model, plan, "sop", TRUNK_SEED)})
        atomic_write_text(probes_path, json.dumps(probes))
        model.train()
    history = read_metrics(folder / METRICS_FILE)[0]
    return {"params": sum(p.numel() for p in model.parameters()), "probes": probes, "curve": curve(history),
            "train_seconds": time.perf_counter() - start, "steps": trainer.step, "tokens": plan.tokens_until(plan.stop)}


def trunk_checkpoint(folder: Path, step: int) -> Path:
    return checkpoint_dir(folder, step)


# ---------------------------------------------------------------------------------------------- branches
def fresh_sentence_classifier(model: AlbertForPreTraining, optimizer: torch.optim.Optimizer, seed: int) -> None:
    """Draw the sentence classifier anew (as at initialisation, from `seed`) and drop its optimizer moments."""
    head = model.sop_classifier.classifier
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        head.weight.copy_(torch.randn(head.weight.shape, generator=generator) * model.config.initializer_range)
        head.bias.zero_()
    for parameter in (head.weight, head.bias):
        optimizer.state.pop(parameter, None)


BRANCH_SAVE_EVERY = 250  # a branch given a folder (Stage A's levers) keeps a checkpoint this often, to resume


def train_branch(checkpoint: Path, row: str, seed: int, trunk: TrunkPlan, plan: BranchPlan, budget,
                 lever=None, folder: Path | None = None) -> dict:
    """From the trunk's checkpoint: the same optimizer and schedule, `row`'s sentence task, plan's two phases;
    scored at the short length after the short phase and at both lengths at the end; then fine-tuned downstream.

    `lever` (a levers.Lever: Stage A's screen against SOP's plateau) changes the sentence path's optimizer or its
    data after the fresh head is drawn, and skips the downstream fine-tuning. `folder` keeps checkpoints (and the
    score after the short phase) there, so that a killed run resumes where it stopped; the folder is removed once
    the run ends.
    Without either, the branch is exactly Table 5 v3's (its cached runs keep their keys and numbers)."""
    setup = trunk.setup(row, BRANCH_DATA_SEED + seed)
    if folder is not None:
        setup = setup.replace(out=str(folder), save_every=BRANCH_SAVE_EVERY, keep=1)
    documents, tokenizer = token_documents("train", trunk.max_documents), Tokenizer.default()
    short, long = plan.phases(trunk)
    source = (lever.batches(trunk, seed, documents, tokenizer, (short, long)) if lever is not None
              else training_batches(setup, documents, tokenizer, phases=(short, long)))
    model = AlbertForPreTraining(trunk_config()).to(experiment_device())
    trainer = build_trainer(setup, model, source)
    state = load_checkpoint(checkpoint, model, trainer.optimizer)
    start_step = trainer.step = state["step"]
    fresh_sentence_classifier(model, trainer.optimizer, seed)
    train_sentence_head(model, row != "none")  # the none row: pooler and head frozen, as the trunk left them
    if lever is not None:
        lever.prepare(model, trainer.optimizer)
    resumed_at = trainer.resume() if folder is not None else 0  # 0: nothing to resume, the branch starts here
    start = time.perf_counter()
    trainer.config = dataclasses.replace(trainer.config, max_steps=start_step + short.steps)
    history = trainer.train().history
    after_short = _after_short(model, trainer, trunk, row, seed, short, folder)
    model.train()
    trainer.config = dataclasses.replace(trainer.config, max_steps=start_step + short.steps + long.steps)
    history += trainer.train().history
    seconds = time.perf_counter() - start
    final = score_point(model, trunk, own_task(row), seed)
    if folder is not None:
        history = read_metrics(Path(folder) / METRICS_FILE)[0]  # every step, also those before a resumption
    result = {"row": row, "seed": seed, "start_step": start_step, "steps": trainer.step,
              "tokens": short.tokens + long.tokens, "train_seconds": seconds, "curve": curve(history),
              "after_short": after_short, **final}
    if lever is not None:
        result["lever"] = lever.settings()
        result["resumed_at"] = resumed_at or None
    else:
        result["downstream"] = downstream(model, seed, budget)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)  # the checkpoints only served a resumption; the record stays
    return result


AFTER_SHORT_FILE = "after_short.json"


def _after_short(model, trainer, trunk: TrunkPlan, row: str, seed: int, short: Phase, folder: Path | None) -> dict:
    """The branch scored at the short length after its short phase (read back when a resumed run is past it)."""
    path = Path(folder) / AFTER_SHORT_FILE if folder is not None else None
    if path is not None and path.exists():
        return json.loads(path.read_text())
    scores = {"step": trainer.step, **score_point(model, trunk, own_task(row), seed, (short.seq_len,))}
    if path is not None:
        atomic_write_text(path, json.dumps(scores))
    return scores


DOWNSTREAM = ("austen-mc", "polarity")  # several sentences, one sentence


def downstream(model: AlbertForPreTraining, seed: int, budget) -> dict:
    """Each downstream task fine-tuned from the model's encoder (the fine-tuning experiment's budget and seed)."""
    from ...tasks.scoring import test_predictions
    from .finetune import finetune_settings

    out = {}
    for task in DOWNSTREAM:
        settings = finetune_settings(budget, seed)[task]
        result = run_task(task, model, settings, config=model.config, device=experiment_device())
        predicted, true = test_predictions(result.pop("model"), task, settings)
        out[task] = {"accuracy": result["accuracy"], "n": result.get("n"), "epochs": result["epochs"],
                     "train_seconds": result["train_seconds"], "settings": dataclasses.asdict(settings),
                     "correct": bits(predicted == true), "answers": sorted(set(predicted.tolist()))}
    return out


# ---------------------------------------------------------------------------------------------- from scratch
def train_scratch(row: str, seed: int, trunk: TrunkPlan) -> dict:
    """A row trained from scratch on the whole recipe (5,000 steps): the clean version, without a shared trunk."""
    setup = trunk.setup(row, seed)
    documents = token_documents("train", trunk.max_documents)
    model = build_model(setup, trunk_config(), documents)
    train_sentence_head(model, row != "none")
    model.to(experiment_device())
    trainer = build_trainer(setup, model, training_batches(setup, documents, Tokenizer.default()))
    start = time.perf_counter()
    result = trainer.train()
    return {"row": row, "seed": seed, "steps": result.step, "tokens": trunk.tokens_until(result.step),
            "train_seconds": time.perf_counter() - start, "curve": curve(result.history),
            **score_point(model, trunk, own_task(row), seed)}
