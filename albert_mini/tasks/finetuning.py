"""Fine-tuning: the pretraining trainer with a task objective, batches of task features, and the task's score.

The loop is `albert_mini.training.trainer.Trainer` (accumulation, clipping, schedule, logging, checkpoints,
resume) with `TaskObjective` in place of the pretraining objective. A model starts from a pretrained albert_mini
checkpoint, from Hugging Face weights, or from random initialisation (the control every result is compared to).
What depends on the head comes from the task's kind (albert_mini.tasks.kinds); tasks come from
albert_mini.tasks.registry. The command line is `albert-mini finetune` (albert_mini/commands/finetune.py).

The registry and the tokenizer are imported inside `run_task`, the one function that uses them. The registry's
shipped tasks are read by tasks.austen_tasks and tasks.polarity, which only read files; the code that builds or
downloads those files is the harness's (albert_mini/harness/data/), which the library never imports.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from ..devices import check_device_name, describe_device, resolve_device
from ..errors import Diverged, MissingFileError, UsageError, UserError
from ..model.config import AlbertConfig
from ..model.hf import from_hf, inspect_hf_dir
from ..paths import sha256_bytes, sha256_file
from ..text.batch_source import BatchSource
from ..training import rundir
from ..training.checkpoint import CheckpointError, latest_checkpoint, load_pretrained
from ..training.objectives import as_stat, at_least_one
from ..training.optim import WarmupPolyDecay, build_optimizer, check_rate, check_steps
from ..training.shell.directory import RunDirectory
from ..training.trainer import TrainConfig, Trainer
from .kinds import task_kind

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["FinetuneSettings", "build_task_model", "in_order", "predict_logits", "run_task"]

if TYPE_CHECKING:
    from .registry import Task

_ENCODER_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class TokenizerMismatch(UserError, ValueError):
    """A tokenizer that is not the one the model was pretrained with; the message names the one to pass."""


class TaskObjective:
    """The trainer's objective for a fine-tuning head: mean loss per example, and accuracy.

    What counts as a hit is the kind's (the arg-max label, or for spans both the arg-max start and end token);
    the task metrics proper (accuracy on the test split, exact match and F1) come from `evaluate_task`.
    """

    name = "finetune"
    stat_names = ("loss", "correct", "examples")  # loss summed over examples, correct, examples
    denominator_names = ("examples",)
    progress = {"loss": "loss", "acc": "acc"}

    def __init__(self, kind: str):

        self.kind = task_kind(kind)
        self.inputs = (*_ENCODER_INPUTS, *self.kind.targets)
        self.required = ("input_ids", *self.kind.targets)

    def denominators(self, batch: dict) -> dict:
        """Examples in the micro-batch (a multiple-choice example counts once, whatever its options)."""
        return {"examples": batch["input_ids"].shape[0]}

    def __call__(self, out, batch: dict, denominators: dict) -> tuple[torch.Tensor, dict]:
        n = batch["input_ids"].shape[0]
        loss_sum = out.loss * n  # the heads' losses are HF's means over examples
        hits = self.kind.hits(out, batch)
        stats = {"loss": as_stat(loss_sum, loss_sum.device), "correct": as_stat(hits.sum(), loss_sum.device),
                 "examples": as_stat(n, loss_sum.device)}
        return loss_sum / at_least_one(denominators["examples"], loss_sum), stats

    def metrics(self, sums: dict) -> dict:
        loss, correct, n = (sums[k] for k in self.stat_names)
        return {"loss": loss / n if n else None, "acc": correct / n if n else None}


class TaskBatches(BatchSource):
    """Shuffled mini-batches of task features, epoch after epoch, with a resumable position.

    `features` is any sequence; `collate` turns a list of them into a dict of tensors. Each epoch is a fresh
    permutation from a generator seeded with (seed, epoch), so a resumed run sees the same batches. Every batch
    is full: the last `len(features) % batch_size` features of an epoch's permutation wait for a later epoch.
    """

    def __init__(self, features: Sequence, collate: Callable[[list], dict], batch_size: int, seed: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if len(features) < batch_size:
            raise ValueError(f"{len(features)} features cannot fill one batch of {batch_size}; "
                             "lower batch_size or add data")
        super().__init__()
        self.features, self.collate, self.batch_size, self.seed = features, collate, batch_size, seed

    def batches_in_epoch(self, epoch: int) -> int:
        return len(self.features) // self.batch_size

    def batch(self, epoch: int, index: int) -> dict:
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self.features))
        chosen = order[index * self.batch_size:(index + 1) * self.batch_size]
        return self.collate([self.features[i] for i in chosen])


def in_order(features: Sequence, collate: Callable[[list], dict], batch_size: int) -> list[dict]:
    """Evaluation batches: every feature once, in order, the last batch possibly smaller."""
    return [collate(list(features[i:i + batch_size])) for i in range(0, len(features), batch_size)]


# ---------------------------------------------------------------------- models
def build_task_model(kind: str, init: str | Path | nn.Module | None = None, config: AlbertConfig | None = None,
                     num_labels: int = 2, seed: int = 0) -> nn.Module:
    """A task head whose encoder comes from `init`: None/"random", a pretraining checkpoint, an HF dir or a model.

    Only `albert.*` weights are taken from the source; the head itself always starts from random weights
    drawn with `seed`, so a pretrained and a random-init model differ only in their encoders.
    """

    spec = task_kind(kind)
    source = None if init in (None, "random") else _encoder_source(init)
    if source is not None:
        config = source.config
    if config is None:
        raise ValueError("random initialisation needs a config, e.g. AlbertConfig.from_preset('albert-mini')")
    torch.manual_seed(seed)
    model = spec.new_head(config, num_labels)
    if source is not None:
        encoder = {k: v for k, v in source.state_dict().items() if k.startswith("albert.")}
        missing, _ = model.load_state_dict(encoder, strict=False)
        if any(k.startswith("albert.") for k in missing):
            raise CheckpointError(f"{init} lacks encoder weights {[k for k in missing if k.startswith('albert.')][:3]}")
    return model


def _encoder_source(init) -> nn.Module:
    """A model whose `albert.*` weights are the encoder to start from."""
    if isinstance(init, nn.Module):
        model = init
    else:
        path = Path(init)
        if not path.exists():
            raise MissingFileError(f"{path} does not exist; pass a pretraining run or checkpoint directory "
                                   "(albert-mini pretrain), an HF save_pretrained directory, "
                                   "or 'random'")
        if _is_hf_folder(path):
            model = from_hf(path)
        else:
            model = load_pretrained(path)
    if type(model).__name__ == "AlbertModel":  # a bare encoder: give its weights the `albert.` prefix
        wrapper = nn.Module()
        wrapper.albert, wrapper.config = model, model.config
        return wrapper
    if not hasattr(model, "albert"):
        raise TypeError(f"{type(model).__name__} has no ALBERT encoder to fine-tune")
    return model


def _is_hf_folder(path: Path) -> bool:
    """Whether `path` is a Hugging Face save_pretrained folder (its config.json names architectures), not an
    albert_mini checkpoint (which has a manifest)."""
    return (path.is_dir() and (path / "config.json").is_file() and not (path / "manifest.json").exists()
            and _is_hf_dir(path))


def _is_hf_dir(path: Path) -> bool:
    config = _read_json(path / "config.json")
    return isinstance(config, dict) and "architectures" in config


def _read_json(path: Path):
    """The JSON in `path`; CheckpointError naming the file when it does not parse."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path} is not valid JSON ({err}); restore it, or pass another --init") from None


def model_tokenizer(init: str | Path) -> tuple[int | None, dict | None, Path | None]:
    """What a model folder records of its tokenizer: (vocab_size, the run's tokenizer record, the run.json read).

    A run.json whose tokenizer record is not an object with a string sha256 is a CheckpointError naming it."""
    path = Path(init)
    if not path.is_dir():
        return None, None, None
    config_file = path / "config.json"
    if not config_file.is_file():
        latest = latest_checkpoint(path)  # a run directory without its config.json: the checkpoints hold one
        config_file = latest / "config.json" if latest is not None else config_file
    config = _read_json(config_file) if config_file.is_file() else None
    vocab = config.get("vocab_size") if isinstance(config, dict) else None
    vocab = vocab if isinstance(vocab, int) and not isinstance(vocab, bool) else None
    for run_json in (path / "run.json", path.parent.parent / "run.json" if path.parent.name == "checkpoints" else None):
        if run_json is not None and run_json.is_file():
            record = _read_json(run_json)
            tokenizer = record.get("tokenizer") if isinstance(record, dict) else None
            if tokenizer is not None and not (isinstance(tokenizer, dict)
                                              and isinstance(tokenizer.get("sha256", ""), str)
                                              and isinstance(tokenizer.get("path", ""), str)):
                raise CheckpointError(f"{run_json}: its tokenizer record {tokenizer!r} is not an object with the "
                                      "tokenizer's path and sha256; restore the run's run.json, or pass another "
                                      "--init")
            return vocab, tokenizer, run_json
    return vocab, None, None


OWN_TOKENIZER = "spiece.model"  # a model folder's own SentencePiece model (the name HF's AlbertTokenizer saves)


def check_tokenizer(init, tokenizer, config: AlbertConfig | None = None) -> None:
    """Refuse a tokenizer that is not shown to be the one the model `init` was pretrained with.

    For a model folder the proof is the tokenizer's sha256 in the run record (run.json, the pretraining run's),
    else the folder's own spiece.model (as Hugging Face folders carry it): the tokenizer must be that file. A
    folder with neither is refused too: a tokenizer of the right size but other pieces would fine-tune on
    scrambled ids without an error. For a model object only the vocabulary size can be compared; for random
    initialisation the tokenizer must fit the config's vocabulary."""
    if isinstance(init, nn.Module):
        vocab, record, run_json = getattr(getattr(init, "config", None), "vocab_size", None), None, None
    elif init in (None, "random"):
        if config is not None and tokenizer.vocab_size > config.vocab_size:
            raise TokenizerMismatch(f"the tokenizer {tokenizer.path} has {tokenizer.vocab_size} pieces, more than "
                                    f"the model's vocab_size {config.vocab_size}; use a preset or tokenizer that fit")
        return
    else:
        vocab, record, run_json = model_tokenizer(init)
        if _is_hf_folder(Path(init)):  # the folder's own faults first (not ALBERT, pickled weights, bad fields)
            vocab = inspect_hf_dir(init).config.vocab_size
    if vocab is not None and vocab != tokenizer.vocab_size:
        hint = f"pass --tokenizer {record['path']}" if record and record.get("path") else "pass the tokenizer it used"
        own = Path(init) / OWN_TOKENIZER if not isinstance(init, nn.Module) else None
        hint = f"pass --tokenizer {own}" if own is not None and own.is_file() and not record else hint
        raise TokenizerMismatch(f"the tokenizer {tokenizer.path} has {tokenizer.vocab_size} pieces but the model "
                                f"{init} was pretrained with {vocab}; {hint}")
    if isinstance(init, nn.Module):
        return
    digest = tokenizer_sha256(tokenizer)
    if record and record.get("sha256"):
        if digest != record["sha256"]:
            raise TokenizerMismatch(f"the tokenizer {tokenizer.path} is not the one the model {init} was pretrained "
                                    f"with (sha256 {digest[:12]}... differs from {record['sha256'][:12]}... in "
                                    f"{run_json}); pass --tokenizer {record.get('path') or 'with that file'}")
        return
    own = Path(init) / OWN_TOKENIZER
    if own.is_file():
        if digest != sha256_file(own):
            raise TokenizerMismatch(f"the tokenizer {tokenizer.path} is not the model's own {own} (their sha256 "
                                    f"differ); pass --tokenizer {own}")
        return
    raise TokenizerMismatch(f"nothing shows that the tokenizer {tokenizer.path} is the one the model {init} was "
                            f"trained with: the folder has no run.json recording a tokenizer's sha256 and no "
                            f"{OWN_TOKENIZER}; copy the model's own SentencePiece model into {own} and pass "
                            f"--tokenizer {own}")


def tokenizer_sha256(tokenizer) -> str:
    """The sha256 of a tokenizer's model file, or of its model proto when it was not read from a file."""
    reference = tokenizer.file_reference()
    return reference["sha256"] if reference else sha256_bytes(tokenizer.sp.serialized_model_proto())


# ---------------------------------------------------------------------- prediction
@torch.no_grad()
def predict_logits(model: nn.Module, batches: Sequence[dict]) -> torch.Tensor:
    """Concatenated logits of the model over evaluation batches (eval mode, targets not needed)."""
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        outs = [model(**{k: b[k].to(device) for k in _ENCODER_INPUTS if k in b}).logits.cpu() for b in batches]
    finally:
        model.train(was_training)
    if outs and outs[0].dim() == 3:  # span logits (B, T, 2): batches are padded to different lengths T
        width = max(o.shape[1] for o in outs)
        # A padded position must never win an arg-max, so it gets the lowest score there is.
        outs = [torch.nn.functional.pad(o, (0, 0, 0, width - o.shape[1]), value=torch.finfo(o.dtype).min)
                for o in outs]
    return torch.cat(outs)


def evaluate_task(model: nn.Module, task: Task, tokenizer, examples: Sequence, features: Sequence | None = None,
                  batch_size: int = 32) -> dict:
    """The task's metric on labelled examples: accuracy, or exact match and F1 (in %) for spans."""
    features = task.features(tokenizer, examples) if features is None else features
    return task.spec.score(predict_logits(model, in_order(features, task.collate, batch_size)), features, examples)


@dataclass
class FinetuneSettings:
    """A fixed fine-tuning budget: the same for a pretrained and a randomly initialised encoder."""

    steps: int
    batch_size: int
    lr: float = 3e-4
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    seed: int = 0
    max_train_examples: int | None = None  # fast mode: the first examples only
    max_eval_examples: int | None = None
    # Where to train (albert_mini.devices): auto = a CUDA GPU, else Apple's GPU (MPS), else the CPU. Not part of
    # the budget: the experiments' run cache leaves it out of a run's key.
    device: str = "auto"

    def __post_init__(self):
        check_device_name(self.device)
        check_steps(self.steps, "steps")
        check_steps(self.batch_size, "batch_size")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps and batch_size must be >= 1, got {self.steps} and {self.batch_size}")
        check_rate(self.lr, "lr")
        if not 0 <= self.warmup_fraction <= 1:
            raise ValueError(f"warmup_fraction must be in [0, 1], got {self.warmup_fraction}")
        check_rate(self.weight_decay, "weight_decay")


def run_task(task: Task | str, init, settings: FinetuneSettings, tokenizer=None, config: AlbertConfig | None = None,
             out_dir: str | Path | None = None, progress: bool = False, device: str | torch.device | None = None,
             overwrite: bool = False, record: dict | None = None) -> dict:
    """Fine-tune a fresh head on `task` from `init` (a checkpoint, an HF dir or "random"); score the test split.

    With `out_dir`, the run directory is settled by the library as for pretraining (training/shell/directory.py):
    checked, locked while the run trains, its run.json written (`record`, or one naming the task, the init and the
    settings), and the run resumed from its newest checkpoint when the folder holds this very run (a run of other
    settings is refused unless `overwrite`). The model trains on `device` (default: settings.device, resolved by
    albert_mini.devices; "auto" takes a GPU when there is one); the head is drawn on the CPU first, so its start is
    the same on every device. The result and run.json name the device used.
    """
    directory = RunDirectory.open(out_dir) if out_dir is not None else None
    try:
        return _run_task(task, init, settings, tokenizer, config, directory, progress, device, overwrite, record)
    finally:
        if directory is not None:
            directory.release()


def _run_task(task, init, settings, tokenizer, config, directory, progress, device, overwrite, record) -> dict:
    from ..text.tokenizer import Tokenizer  # see the module's docstring
    from .registry import get_task

    device = resolve_device(settings.device if device is None else device)  # a device that is not here: at once
    task = get_task(task) if isinstance(task, str) else task
    tokenizer = tokenizer or Tokenizer.default()
    check_tokenizer(init, tokenizer, config)
    train_examples = task.load(task.splits[0])[:settings.max_train_examples]
    test_examples = task.load(task.splits[-1])[:settings.max_eval_examples]
    for split, examples in ((task.splits[0], train_examples), (task.splits[-1], test_examples)):
        _check_labelled(task, split, examples)
    train_features = task.features(tokenizer, train_examples)
    test_features = task.features(tokenizer, test_examples)
    if len(train_features) < settings.batch_size:
        raise UsageError(f"{task.name} gives {len(train_features)} training features, fewer than one batch of "
                         f"--batch-size {settings.batch_size}; use --batch-size {max(1, len(train_features))} or lower")
    resume = False
    if directory is not None:
        resume = directory.settle(record or default_record(task, init, settings, tokenizer), overwrite)
    out_dir = directory.out if directory is not None else None
    model = build_task_model(task.kind, init, config=config, num_labels=task.num_labels, seed=settings.seed)
    model.to(device)
    start = time.perf_counter()
    optimizer = build_optimizer(model, settings.optimizer, lr=settings.lr, weight_decay=settings.weight_decay)
    schedule = WarmupPolyDecay(settings.lr, settings.steps, round(settings.warmup_fraction * settings.steps))
    trainer = Trainer(model, optimizer, schedule,
                      TaskBatches(train_features, task.collate, settings.batch_size, seed=settings.seed),
                      TrainConfig(max_steps=settings.steps, out_dir=None if out_dir is None else str(out_dir),
                                  progress=progress, log_every=max(1, settings.steps // 20)),
                      objective=TaskObjective(task.kind))
    if out_dir is not None:
        rundir.amend_record(out_dir, device=describe_device(device))
    if resume:  # rank 0's pick (a damaged newest one set aside); on another device: said, and noted in run.json
        trainer.resume(directory.checkpoint)
    try:
        result = trainer.train()
    except FloatingPointError as err:  # the trainer's NonFiniteError names the step; nothing non-finite is saved
        step, what = getattr(err, "step", trainer.step + 1), getattr(err, "what", str(err).split(";")[0])
        raise Diverged(f"the fine-tuning loss diverged at step {step} ({what}); lower --lr (now {settings.lr:g}) "
                       "and start again") from err
    seconds = time.perf_counter() - start
    scores = evaluate_task(model, task, tokenizer, test_examples, test_features)
    return {"task": task.name, "init": init_label(init), "split": task.splits[-1],
            **scores, "train_examples": len(train_examples), "train_features": len(train_features),
            "epochs": settings.steps * settings.batch_size / len(train_features), "train_seconds": round(seconds, 1),
            "device": describe_device(device),
            "final_train_loss": result.train["loss"] if result.train else None,
            "history": [{"step": h["step"], "loss": h["loss"], "acc": h["acc"]} for h in result.history
                        if h["type"] == "train"], "model": model}


def init_label(init) -> str:
    """What a result and a run record call the encoder a run started from."""
    return "random" if init in (None, "random") else type(init).__name__ if isinstance(init, nn.Module) else str(init)


def default_record(task: Task, init, settings: FinetuneSettings, tokenizer) -> dict:
    """run.json of a fine-tuning run started from code: the task, the init and the budget that decide the numbers
    (the device does not: a run may resume on another), and the tokenizer."""
    budget = {k: v for k, v in dataclasses.asdict(settings).items() if k != "device"}
    return {"kind": "finetune", "settings": {"task": task.name, "init": init_label(init), **budget},
            "tokenizer": tokenizer.file_reference()}


def _check_labelled(task: Task, split: str, examples: Sequence) -> None:
    """Refuse an empty split, or one with unlabelled examples: neither can be trained on or scored."""
    if not examples:
        raise UsageError(f"the {split} split of {task.name} holds no examples; give a file with examples")
    missing = [e for e in examples if _unlabelled(e)]
    if missing:
        raise UsageError(f"the {split} split of {task.name} has {len(missing)} of {len(examples)} examples without "
                         f"a label or answer (first: {missing[0].id}); training and scoring need labelled files, "
                         "e.g. GLUE's train and dev files rather than its test files")


def _unlabelled(example) -> bool:
    if hasattr(example, "answers"):
        return not example.answers
    return getattr(example, "label", getattr(example, "answer", 0)) is None
