"""Table 5 from one trunk: an MLM-only trunk, then branches that add no sentence task, NSP or SOP.

Training three models from scratch for each sentence task spends most of the compute on what they share (learning
the language), and at mini scale none of them got far enough for a sentence task to show. So the experiment trains
the shared part once: a trunk with MLM only, probed for order and topic features along the way; then every branch
starts from the trunk's weights with a fresh sentence head and trains at full length with its own task beside MLM.
A seed decides a branch's data order, masks and head; the three branches of one seed draw the same seed, so they
pair up. Every model is scored on the same held-out examples: MLM on the same masked tokens, SOP and NSP on every
validation and test pair, by its own head where it trained one and by linear probes for both tasks.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...model.albert import AlbertForPreTraining
from ...model.config import AlbertConfig
from ...safe_files import atomic_write_bytes, atomic_write_text
from ...specials import IGNORE_INDEX
from ...text.tokenizer import Tokenizer
from ...training import build
from ...training.checkpoint import weights_bytes
from ...training.recipe import train_sentence_head
from ...training.setup import Phase, PretrainingSetup, in_process
from ...training.trainer import Trainer
from ..probes import linear_probe, pooled_outputs
from ..smoothness import layer_smoothness
from .data import HELD_OUT_SEED, pair_set, token_documents
from .measure import bits, training_curve
from .provenance import experiment_device

PAIR_SEED = 11  # the held-out SOP / NSP pairs
PROBE_SEED = 12  # the training pairs a probe is fitted on
SCORED_LENGTHS = (64, 128)  # MLM is scored at both: the curriculum's short length and the book's length


@dataclass(frozen=True)
class TrunkPlan:
    """The MLM-only trunk: a 64-token phase, then a 128-token phase long enough that positions 64-127 learn."""

    short: Phase = Phase(1500, 64, 64)
    long: Phase = Phase(1500, 128, 32)
    lr: float = 5e-3
    warmup: int = 125  # steps: what counts is their number (chapter 7's warm-up check), not a fraction
    probe_at: tuple[int, ...] = (750, 1500, 3000)  # steps after which the trunk is probed (the last: the end)
    eval_batches: int = 20  # held-out MLM batches of 32 sequences at each length (128 tokens: 21 exist)
    probe_train: int = 4096  # training pairs a linear probe is fitted on
    probe_steps: int = 300
    max_documents: int | None = None  # only the first chapters of each split (fast mode)

    @property
    def steps(self) -> int:
        return self.short.steps + self.long.steps

    @property
    def tokens(self) -> int:
        return self.short.tokens + self.long.tokens

    def setup(self, seed: int) -> PretrainingSetup:
        """The trunk as a pretraining setup: MLM only, BERT's curriculum with this plan's two phases."""
        setup = in_process(
            task="none", seed=seed, steps=self.steps, seq_len=self.long.seq_len, batch_size=self.long.batch_size,
            short_seq_len=self.short.seq_len, short_fraction=self.short.steps / self.steps,
            short_batch_size=self.short.batch_size, lr=self.lr, warmup=self.warmup,
            log_every=max(1, self.steps // 40))
        assert setup.phases() == (self.short, self.long), setup.phases()
        return setup


@dataclass(frozen=True)
class BranchPlan:
    """A branch: from the trunk's weights, MLM plus a sentence task (or none) at full length."""

    phase: Phase = Phase(750, 128, 32)  # 3,072,000 tokens
    lr: float = 2e-3
    warmup: int = 75

    @property
    def tokens(self) -> int:
        return self.phase.tokens

    def setup(self, task: str, seed: int) -> PretrainingSetup:
        return one_phase_setup(self.phase, task, seed, self.lr, self.warmup)


def one_phase_setup(phase: Phase, task: str, seed: int, lr: float, warmup: int) -> PretrainingSetup:
    """A pretraining setup of one phase (a branch, the classroom model's continuation)."""
    return in_process(task=task, seed=seed, steps=phase.steps, seq_len=phase.seq_len, batch_size=phase.batch_size,
                      lr=lr, warmup=warmup, log_every=max(1, phase.steps // 40))


FULL_TRUNK, FULL_BRANCH = TrunkPlan(), BranchPlan()
FAST_TRUNK = TrunkPlan(short=Phase(2, 32, 4), long=Phase(2, 64, 2), warmup=1, probe_at=(2, 4), eval_batches=1,
                       probe_train=32, probe_steps=5, max_documents=6)
FAST_BRANCH = BranchPlan(phase=Phase(2, 64, 2), warmup=1)


def trunk_config() -> AlbertConfig:
    return AlbertConfig.from_preset("albert-mini")


# ---------------------------------------------------------------------------------------------- data
@functools.cache
def held_out_mlm(seq_len: int, count: int, max_documents: int | None) -> list[dict]:
    """Masked held-out batches (validation chapters, SOP layout, masked once): every model is scored on these."""
    setup = PretrainingSetup(task="sop", seed=HELD_OUT_SEED, steps=1, seq_len=seq_len, batch_size=32)
    return build.validation_batches(setup, token_documents("validation", max_documents), Tokenizer.default(),
                                    count=count)


def held_out_pairs(task: str, plan: TrunkPlan, seq_len: int = 128):
    """Every validation and test pair of `task` (the same for every model)."""
    return pair_set(task, ("validation", "test"), seq_len, None, PAIR_SEED, plan.max_documents)[:2]


def probe_pairs(task: str, plan: TrunkPlan, seq_len: int = 128):
    return pair_set(task, ("train",), seq_len, plan.probe_train, PROBE_SEED, plan.max_documents)[:2]


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
        where = (labels != IGNORE_INDEX).nonzero()  # (N, 2), row-major like out.mlm_logits
        right = out.mlm_logits.argmax(-1) == labels[labels != IGNORE_INDEX]
        loss += float(out.mlm_loss_sum)
        correct += float(right.sum())
        count += len(right)
        second = where[:, 1] >= half
        for part, rows in enumerate((~second, second)):
            by_half[part] += (float(right[rows].sum()), float(rows.sum()))
    return {"loss": loss / count, "acc": correct / count, "tokens": int(count),
            "acc_first_half": by_half[0, 0] / max(by_half[0, 1], 1),
            "acc_second_half": by_half[1, 0] / max(by_half[1, 1], 1)}


def sentence_scores(model: AlbertForPreTraining, task: str, plan: TrunkPlan, trained_task: str, seed: int,
                    seq_len: int = 128) -> dict:
    """A sentence task on every held-out pair: a linear probe always, the model's own head where it trained one."""
    model.eval()
    device = next(model.parameters()).device
    test_x, test_y = held_out_pairs(task, plan, seq_len)
    train_x, train_y = probe_pairs(task, plan, seq_len)
    test_pooled, test_logits = pooled_outputs(model, {k: v.to(device) for k, v in test_x.items()}, chunk=256)
    train_pooled, _ = pooled_outputs(model, {k: v.to(device) for k, v in train_x.items()}, chunk=256)
    predictions = linear_probe(train_pooled.cpu(), train_y, test_pooled.cpu(), plan.probe_steps, seed=seed)
    correct = predictions == test_y
    out = {"examples": len(test_y), "label_share": float(test_y.float().mean()),
           "probe": {"accuracy": float(correct.float().mean()), "correct": bits(correct),
                     "answers": sorted(set(predictions.tolist()))}}
    if task == trained_task:
        head = test_logits.argmax(-1).cpu()
        right = head == test_y
        out["head"] = {"accuracy": float(right.float().mean()), "correct": bits(right),
                       "answers": sorted(set(head.tolist()))}
    return out


def score(model: AlbertForPreTraining, plan: TrunkPlan, trained_task: str, seed: int, lengths=(128,)) -> dict:
    """Everything a row of Table 5 reads: MLM at each length, SOP and NSP by head and probes, smoothness."""
    result = {f"mlm_{T}": mlm_scores(model, held_out_mlm(T, plan.eval_batches, plan.max_documents))
              for T in lengths}
    for task in ("sop", "nsp"):
        result[task] = sentence_scores(model, task, plan, trained_task, seed)
    device = next(model.parameters()).device
    smooth = layer_smoothness(model.albert, [{k: v.to(device) for k, v in b.items()}
                                             for b in held_out_mlm(128, plan.eval_batches, plan.max_documents)])
    result["smoothness"] = dataclasses.asdict(smooth)
    return result


# ---------------------------------------------------------------------------------------------- training
def trainer_for(model, setup: PretrainingSetup, max_documents: int | None) -> Trainer:
    """The trainer of a trunk, branch or continuation: the pretraining builders on the Austen training chapters."""
    source = build.training_batches(setup, token_documents("train", max_documents), Tokenizer.default())
    return build.build_trainer(setup, model, source)


def curve(history: list[dict]) -> list[dict]:
    return training_curve(history, ("step", "loss", "mlm_acc", "sentence_acc", "tokens_per_s"))


def train_trunk(plan: TrunkPlan, seed: int, weights: Path | None = None) -> dict:
    """Train the MLM-only trunk, probing it at plan.probe_at; save its final weights to `weights`."""
    device = experiment_device()
    config = trunk_config()
    setup = plan.setup(seed)
    model = build.build_model(setup, config, token_documents("train", plan.max_documents))
    model.to(device)
    trainer = trainer_for(model, setup, plan.max_documents)
    probes, history, start = [], [], time.perf_counter()
    for stop in plan.probe_at:
        trainer.config = dataclasses.replace(trainer.config, max_steps=stop)
        history += trainer.train().history
        seq_len = plan.short.seq_len if stop <= plan.short.steps else plan.long.seq_len
        probes.append({"step": stop, "tokens": trained_tokens(plan, stop), "seq_len_now": seq_len,
                       **score(model, plan, "none", seed, lengths=SCORED_LENGTHS)})
        model.train()
    if weights is not None:
        save_weights(model, weights)
    return {"params": sum(p.numel() for p in model.parameters()), "probes": probes, "curve": curve(history),
            "train_seconds": time.perf_counter() - start, "steps": trainer.step, "tokens": plan.tokens}


def trained_tokens(plan: TrunkPlan, step: int) -> int:
    short = min(step, plan.short.steps)
    return short * plan.short.tokens // plan.short.steps + (step - short) * plan.long.tokens // plan.long.steps


def train_branch(weights: Path, task: str, plan: BranchPlan, trunk: TrunkPlan, seed: int) -> dict:
    """From the trunk's weights: a fresh sentence head (seeded), then MLM + `task` for plan.phase."""
    device = experiment_device()
    model = AlbertForPreTraining(trunk_config())
    load_weights(model, weights)
    torch.manual_seed(seed)
    head = model.sop_classifier.classifier  # a fresh head, drawn as at initialisation: the trunk's never trained
    torch.nn.init.normal_(head.weight, std=model.config.initializer_range)
    torch.nn.init.zeros_(head.bias)
    train_sentence_head(model, task != "none")
    model.to(device)
    trainer = trainer_for(model, plan.setup(task, seed), trunk.max_documents)
    start = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - start
    return {"task": task, "seed": seed, "steps": result.step, "tokens": plan.tokens, "train_seconds": seconds,
            "curve": curve(result.history), **score(model, trunk, task, seed, lengths=SCORED_LENGTHS)}


def save_weights(model: torch.nn.Module, path: Path) -> None:
    """Weights as safetensors (tied tensors stored once, the checkpoints' format), written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, weights_bytes(model, {"format": "pt"}))


def load_weights(model: torch.nn.Module, path: Path) -> None:
    from safetensors.torch import load_model

    if not Path(path).exists():
        raise FileNotFoundError(f"trunk weights {path} are missing: run the trunk first "
                                "(python -m albert_mini.study.experiments sentence_task)")
    load_model(model, str(path))


# ---------------------------------------------------------------------------------------------- the classroom model
@dataclass(frozen=True)
class Continuation:
    """Finishing the classroom model at full length: from its weights, MLM + SOP on 128-token sequences only."""

    phase: Phase = Phase(2000, 128, 32)
    lr: float = 2e-3
    warmup: int = 100
    seed: int = 0


def continue_classroom(source: Path, plan: Continuation, out: Path) -> dict:
    """Train the exported model in `source` on with `plan`; write its weights, config and history to `out`."""
    import json

    from ...training.checkpoint import load_pretrained

    device = experiment_device()
    model = load_pretrained(source).to(device)
    trainer = trainer_for(model, one_phase_setup(plan.phase, "sop", plan.seed, plan.lr, plan.warmup), None)
    start = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - start
    model.cpu().eval()
    save_weights(model, out / "model.safetensors")
    atomic_write_text(out / "config.json", model.config.to_json())
    atomic_write_text(out / "metrics.jsonl", "".join(json.dumps(h) + "\n" for h in result.history))
    record = {"source": str(source), "plan": dataclasses.asdict(plan), "steps": result.step,
              "tokens": plan.phase.tokens, "train_seconds": seconds, "device": str(device)}
    atomic_write_text(out / "continuation.json", json.dumps(record, indent=2) + "\n")
    return record


def segment_type_check(weights: Path, plan: TrunkPlan = FULL_TRUNK) -> dict:
    """The MLM-only trunk on the same masked held-out tokens, scored as given and with every token type set to 0.

    The trunk (and the MLM-only branch) trained on single-segment sequences, so the embedding of token type 1 never
    moved from its initialisation; the held-out batches are sentence pairs. The gap between the two scores is what
    that unseen embedding costs the MLM-only row of Table 5."""
    model = AlbertForPreTraining(trunk_config())
    load_weights(model, weights)
    held_out = held_out_mlm(128, plan.eval_batches, plan.max_documents)
    zeroed = [{**b, "token_type_ids": torch.zeros_like(b["token_type_ids"])} for b in held_out]
    return {"as_scored": mlm_scores(model, held_out), "token_types_zeroed": mlm_scores(model, zeroed)}
