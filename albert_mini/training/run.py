"""A pretraining run as one object: built once from its setup, its directory settled by rank 0, then trained.

`Run.build(setup, info)` does each thing once, in this order:
1. the plan (`RunPlan`): what the build needs from the setup, resolved once into plain values (the tokenizer,
   the model config from the preset, the --config fields and the tokenizer's vocabulary, the phases and dataset
   options, run.json's record); the model is checked against the device's memory before anything is allocated
   (shell/fits.py, for every caller);
2. the text read or mapped once and each dataset built once, then checked (training/run_data.py, from the plan's
   plain values);
3. model, objective, optimizer with its schedule, and the trainer (the builders below, which the experiments,
   the trunk and the research probes call with setups of their own);
4. the run directory (shell/directory.py's `RunDirectory`): rank 0 alone checks, locks, clears and records it
   and picks the checkpoint to resume from; the trainer's shell (training/shell/) saves, resumes, logs and stops.

The run directory gets run.json (the setup's settings, --config included, the model config built from them, the
tokenizer's path and sha256, the sha256 of every text file, the world size, the device the run computes on and
notes such as a resumption on another device; a file inside the repository named relative to its root, so the
record holds no path of the machine's checkout), config.json (the model), metrics.jsonl and
checkpoints/step-NNNNNNN/. Fine-tuning's command settles its directory with the same `RunDirectory`.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..devices import describe_device
from ..errors import Diverged
from ..model.albert import AlbertForPreTraining
from ..model.config import AlbertConfig
from ..model.counting import count_parameters
from ..paths import recorded_path
from ..text.tokenizer import Tokenizer
from . import rundir
from .checkpoint import latest_checkpoint
from .distributed import DistInfo, check_ranks_agree, digest
from .objectives import PretrainingObjective
from .optim import build_optimizer, build_schedule
from .pretraining_model import build_pretraining_model
from .run_data import DataPlan, RunData, load_run_data
from .setup import Phase, PretrainingSetup
from .shell.directory import RunDirectory
from .shell.fits import check_fits
from .trainer import NonFiniteError, TrainConfig, Trainer, TrainResult

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["build_model"]


# ---------------------------------------------------------------------------------------------- builders
def build_model(setup: PretrainingSetup, config: AlbertConfig | None = None, train_documents=None,
                log_prior=None) -> AlbertForPreTraining:
    """The setup's model (its preset and --config fields, or `config`), drawn from its seed, output bias from the
    training text."""
    config = config or setup.model_config()
    return build_pretraining_model(config, setup.task, train_documents, log_prior=log_prior, seed=setup.seed,
                                   output_bias=setup.output_bias, position_init=setup.position_init)


def build_optimization(setup: PretrainingSetup, model) -> tuple:
    """(optimizer, learning-rate schedule): warm-up, then linear decay to 0 at the last step (or constant)."""
    schedule = build_schedule(setup.decay, setup.lr, setup.steps, setup.warmup_steps)
    optimizer = build_optimizer(model, setup.optimizer, lr=setup.lr, weight_decay=setup.weight_decay,
                                betas=setup.betas)
    return optimizer, schedule


def train_config(setup: PretrainingSetup) -> TrainConfig:
    """How long and how the trainer trains, logs, evaluates and saves (without `out`: no checkpoints, as from code)."""
    return TrainConfig(
        max_steps=setup.steps, max_minutes=setup.minutes, accumulate=setup.accumulate, clip_norm=setup.clip_norm,
        log_every=setup.log_every, eval_every=setup.eval_every, eval_batches=setup.eval_batches,
        save_every=setup.save_every if setup.out else 0, keep_checkpoints=setup.keep, out_dir=setup.out,
        bf16=setup.bf16, compile=setup.compile, progress=not setup.quiet, echo=not setup.quiet)


def build_trainer(setup: PretrainingSetup, model, batches, val_batches=None, dist=None) -> Trainer:
    """A Trainer of `model` on `batches` with the setup's objective, optimizer, schedule and loop settings."""
    optimizer, schedule = build_optimization(setup, model)
    return Trainer(model, optimizer, schedule, batches, train_config(setup), val_batches=val_batches, dist=dist,
                   objective=PretrainingObjective(setup.mlm_weight, setup.sentence_weight))


def seed_everything(seed: int) -> None:
    """Seed the global RNGs (Python, NumPy, torch); the data pipeline has its own seeded generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_tokenizer(setup: PretrainingSetup) -> Tokenizer | None:
    """The tokenizer of the run: --tokenizer, the committed Austen model for austen, None for synthetic data."""
    if setup.corpus == "synthetic":
        return None
    return Tokenizer.from_file(setup.tokenizer) if setup.tokenizer else Tokenizer.default()


def recorded_command(argv: list[str] | None = None) -> str:
    """The command line as a run records it: the script (for `python -m`, the module's file) relative to the
    repository root when it lies inside it, every argument as the user gave it."""
    script, *rest = sys.argv if argv is None else argv
    return " ".join([recorded_path(script) if script and Path(script).is_file() else script, *rest])


# ---------------------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class RunPlan:
    """What a run takes from its setup, resolved once, before anything is built: the tokenizer, the model config (the
    preset, the --config fields, the tokenizer's vocabulary), the data's plan (the phases, each dataset's options:
    training/run_data.py) and run.json's record but for the text's fingerprint, known once the text is read. The
    build reads these plain values; it calls no accessor of the setup again."""

    tokenizer: Tokenizer | None
    model_setup: PretrainingSetup  # what the model is built from and recorded as (synthetic: a zeros output bias)
    config: AlbertConfig
    data: DataPlan
    preset_vocab: int  # the preset's vocab_size, to say when the tokenizer's differs
    device: str  # the device the run computes on, as run.json names it
    record: dict  # run.json, its "corpus" still None
    config_json: str  # config.json

    @classmethod
    def of(cls, setup: PretrainingSetup, info: DistInfo) -> RunPlan:
        tokenizer = load_tokenizer(setup)
        reference = tokenizer.file_reference() if tokenizer is not None else None
        vocab = {"vocab_size": tokenizer.vocab_size} if tokenizer is not None else {}
        command = recorded_command()
        data = DataPlan.of(setup)
        # The synthetic corpus has no text to start the output bias from: its bias starts at zero, and the record
        # names that bias, not the flag's default.
        model_setup = setup if setup.corpus != "synthetic" else setup.replace(output_bias="zeros")
        settings = model_setup.settings()
        config = setup.model_config(**vocab)  # resolved once: the preset, --config, the tokenizer's vocabulary
        preset_vocab = setup.model_config().vocab_size  # a text's run cannot set vocab_size with --config
        model, config_json = config.to_dict(), config.to_json()
        device = describe_device(info.device)
        record = {"kind": "pretrain", "settings": settings, "model": model, "tokenizer": reference, "corpus": None,
                  "world_size": info.world_size,
                  "effective_batch": setup.batch_size * info.world_size * setup.accumulate, "device": device,
                  "command": command}
        return cls(tokenizer, model_setup, config, data, preset_vocab, device, record, config_json)

    def run_record(self, corpus: dict | None) -> dict:
        """What run.json holds: the settings that decide the numbers, the model, the tokenizer and the text."""
        return {**self.record, "corpus": corpus}


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class Run:
    """Everything one process of a pretraining run holds: what it was built from, its model, data and trainer."""

    setup: PretrainingSetup
    plan: RunPlan  # what the build took from the setup
    info: DistInfo
    config: AlbertConfig
    tokenizer: Tokenizer | None
    data: RunData
    model: AlbertForPreTraining
    trainer: Trainer
    directory: RunDirectory | None

    @classmethod
    def build(cls, setup: PretrainingSetup, info: DistInfo | None = None, say=print,
              check_memory: Callable[[PretrainingSetup, AlbertConfig, torch.device, tuple[Phase, ...]], None]
              = check_fits) -> Run:
        """Build the run once, resuming it when --out holds the same run (`say`: progress lines of rank 0).
        `check_memory(setup, config, device, phases)` refuses a model that cannot fit before anything is allocated
        (shell/fits.py's estimate, for every caller)."""
        info = info or DistInfo()
        say = progress_lines(setup, info, say)
        directory = RunDirectory.open(setup.out, info) if setup.out else None
        try:
            return cls._build(setup, info, say, check_memory, directory)
        except BaseException:
            if directory is not None:
                directory.release()
            raise

    @classmethod
    def _build(cls, setup, info, say, check_memory, directory) -> Run:
        seed_everything(setup.seed)  # the global RNGs; the data pipeline has its own seeded generators
        plan = RunPlan.of(setup, info)  # the tokenizer, the model config and the settings, resolved once
        config, tokenizer = plan.config, plan.tokenizer
        if directory is not None:
            directory.refuse_other_settings(plan.record, setup.overwrite)  # before the text is read
        check_memory(setup, config, info.device, plan.data.phases)  # before anything is allocated
        data = load_run_data(setup, config, tokenizer, info, say, plan.data)
        # The same flags (checked by the command) can still name other files on another node: the text and the
        # tokenizer each rank read, and the model they make, are compared before the model is built.
        check_ranks_agree({"text": digest(data.corpus), "tokenizer": digest(plan.record["tokenizer"]),
                           "model": digest(plan.record["model"])}, info, shown=lambda key, value: f"{key} {value}",
                          fix="the nodes read different files under the same names (text and tokenizer, by "
                          "sha256); give every node the same files, on a shared file system or copied exactly")
        model = build_model(plan.model_setup, config, data.train_documents).to(info.device)  # the same on every rank
        torch.manual_seed(setup.seed + 1 + info.rank)  # dropout masks differ between ranks
        if directory is not None:  # before the trainer, which reads the log of the run it continues
            directory.settle(plan.run_record(data.corpus), setup.overwrite,
                             files={rundir.CONFIG_FILE: plan.config_json})
        trainer = build_trainer(setup, model, data.train, data.validation, dist=info)
        trainer.run_identity = run_identity(plan.run_record(data.corpus))
        run = cls(setup, plan, info, config, tokenizer, data, model, trainer, directory)
        if directory is not None and directory.resuming:
            if directory.checkpoint is not None:
                trainer.resume(directory.checkpoint)
                say(f"resumed {directory.out} at step {trainer.step}")
            elif info.is_main:
                trainer.resume()  # no checkpoint yet: only the log of a run killed before its first one
        run._describe(say)
        return run

    def _describe(self, say) -> None:
        setup, info, plan = self.setup, self.info, self.plan
        note = phase_note(plan.data.phases)
        if self.tokenizer is not None and self.config.vocab_size != plan.preset_vocab:
            say(f"vocab_size {self.config.vocab_size} from the tokenizer {self.tokenizer.path} (the preset has "
                f"{plan.preset_vocab})")
        model_name = f"{setup.preset} with {' '.join(setup.config)}" if setup.config else setup.preset
        effective = plan.record["effective_batch"]  # batch x processes x accumulation, as run.json records it
        say(f"{model_name}: {count_parameters(self.model):,} parameters on {plan.device} | "
            f"{info.world_size} process(es) | effective batch {effective} x {setup.seq_len} tokens"
            f"{note} | {setup.optimizer} lr {setup.lr:g}, warmup {self.trainer.schedule.warmup_steps}, "
            f"{setup.steps} steps")

    def train(self) -> TrainResult:
        """Train to the end (or the time budget), then release the directory; a diverged loss is one line."""
        setup, trainer = self.setup, self.trainer
        try:
            result = trainer.train()
        except NonFiniteError as err:
            raise Diverged(diverged_message(setup, err.step, err.what)) from err
        except FloatingPointError as err:  # raised by code of another kind (an objective's own check)
            raise Diverged(diverged_message(setup, trainer.step + 1, str(err).split(";")[0])) from err
        finally:
            self.close()
        return result

    def close(self) -> None:
        if self.directory is not None:
            self.directory.release()


def run_identity(record: dict) -> str:
    """A digest of what makes run.json's record this run: its settings, model, tokenizer and text by content (not
    the command line, the device, the notes, or where the files lie)."""
    corpus, tokenizer = record.get("corpus") or {}, record.get("tokenizer") or {}
    return digest({"settings": record["settings"], "model": record["model"], "tokenizer": tokenizer.get("sha256"),
                   "text": sorted((corpus.get("files") or {}).values())})


def progress_lines(setup: PretrainingSetup, info: DistInfo, say=print):
    """`say` on rank 0 of a run that is not --quiet; elsewhere a function that says nothing."""
    return say if info.is_main and not setup.quiet else (lambda *a, **k: None)


def pretrain(setup: PretrainingSetup, info: DistInfo | None = None, check_memory=check_fits) -> TrainResult:
    """What `albert-mini pretrain` does: build the run (resuming it if --out allows), train it, say where it is."""
    info = info or DistInfo()
    say = progress_lines(setup, info)
    run = Run.build(setup, info, say, check_memory)
    result = run.train()
    kept = f"metrics and checkpoints in {Path(setup.out)}" if setup.out else "nothing written (no --out)"
    say(f"stopped at step {result.step} ({result.stop_reason}); {kept}")
    if result.eval is not None:
        say("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.eval.items()
                                     if isinstance(v, float) and k != "elapsed_s"))
    return result


def diverged_message(setup: PretrainingSetup, step: int, what: str) -> str:
    """Why a run stopped on a NaN or infinite loss, its usual causes, and the checkpoint that is kept."""
    last = latest_checkpoint(setup.out) if setup.out else None
    kept = (f"the last good checkpoint, {last.name} in {Path(setup.out) / 'checkpoints'}, is kept" if last
            else "no checkpoint had been written yet")
    return (f"the loss diverged at step {step} ({what}); the usual causes are a learning rate too high (--lr "
            f"{setup.lr:g}), too short a warm-up (--warmup {setup.warmup_steps}) or a --config that makes the model "
            f"unstable; {kept} (no checkpoint holds NaN weights); lower --lr or lengthen --warmup, and start again "
            "with --overwrite")


def phase_note(phases: tuple[Phase, ...]) -> str:
    """How the curriculum's first phase differs from the --seq-len one, said after the effective batch."""
    if len(phases) == 1:
        return ""
    return f" (first {phases[0].steps} steps: {phases[0].batch_size} x {phases[0].seq_len})"
