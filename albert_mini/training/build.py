"""From a PretrainingSetup to a run: batches, model, objective, optimizer with its schedule, and the trainer.

These are the only builders of a pretraining run. The command line (training/launch.py) adds the user's text
and the run directory around them; the experiments (albert_mini.harness.experiments), the trunk and the recipe
probes call them with their own setups. Nothing here checks a setting: the setup did (training/setup.py).
"""

from __future__ import annotations

from ..model.albert import AlbertForPreTraining
from ..model.config import AlbertConfig
from ..text.batch_source import BatchSource, PhasedBatches
from ..text.batches import PretrainingBatches, build_pretraining_dataset
from .objectives import PretrainingObjective
from .optim import WarmupPolyDecay, build_optimizer
from .pretraining_model import build_pretraining_model
from .setup import Phase, PretrainingSetup
from .trainer import TrainConfig, Trainer

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["build_model", "phase_batches", "validation_batches"]

# A "constant" learning rate is the poly decay with a vanishing power: 1 until the last step.
DECAY_POWER = {"linear": 1.0, "constant": 1e-9}


def phase_batches(setup: PretrainingSetup, documents, tokenizer, seq_len: int, batch_size: int,
                  rank: int = 0, world_size: int = 1) -> PretrainingBatches:
    """Training batches of one length: masked as the setup says (dynamic or static), this process's shard."""
    dataset = build_pretraining_dataset(documents, tokenizer, setup.task, seq_len, seed=setup.seed,
                                        dynamic=setup.masking == "dynamic", dupe_factor=setup.dupe_factor,
                                        **setup.masking_options())
    return PretrainingBatches(dataset, batch_size, group_by_length=setup.group_by_length).shard(rank, world_size)


def training_batches(setup: PretrainingSetup, documents, tokenizer, rank: int = 0, world_size: int = 1,
                     phases: tuple[Phase, ...] | None = None) -> BatchSource:
    """The training source: every phase of the schedule in turn (short sequences first under the curriculum).

    `phases` replaces the setup's own for a run that continues another one part-way through its schedule (a
    Table 5 branch: the trunk's optimizer and schedule, phases of its own)."""
    phases = phases or setup.phases()
    sources = [phase_batches(setup, documents, tokenizer, p.seq_len, p.batch_size, rank, world_size)
               for p in phases]
    if len(sources) == 1:
        return sources[0]
    return PhasedBatches(sources[0], sources[1], switch_after=phases[0].steps * setup.accumulate)


def validation_batches(setup: PretrainingSetup, documents, tokenizer, seed: int | None = None,
                       task: str | None = None, count: int | None = None, rank: int = 0,
                       world_size: int = 1) -> list[dict]:
    """Held-out batches at the setup's length, masked once (static) so every evaluation scores the same tokens.

    By default: the setup's task and seed, --eval-batches of them; the experiments fix the seed (and
    the task) so that every model they compare is scored on the same masked tokens."""
    dataset = build_pretraining_dataset(documents, tokenizer, task or setup.task, setup.seq_len,
                                        seed=setup.seed if seed is None else seed, dynamic=False,
                                        **setup.masking_options())
    source = PretrainingBatches(dataset, setup.batch_size).shard(rank, world_size)
    return source.take(setup.eval_batches if count is None else count)


def build_model(setup: PretrainingSetup, config: AlbertConfig | None = None, train_documents=None,
                log_prior=None) -> AlbertForPreTraining:
    """The setup's model (its preset and --config fields, or `config`), drawn from its seed, output bias from the
    training text."""
    config = config or setup.model_config()
    return build_pretraining_model(config, setup.task, train_documents, log_prior=log_prior, seed=setup.seed,
                                   output_bias=setup.output_bias, position_init=setup.position_init)


def build_objective(setup: PretrainingSetup) -> PretrainingObjective:
    return PretrainingObjective(setup.mlm_weight, setup.sentence_weight)


def build_optimization(setup: PretrainingSetup, model) -> tuple:
    """(optimizer, learning-rate schedule): warm-up, then linear decay to 0 at the last step (or constant)."""
    optimizer = build_optimizer(model, setup.optimizer, lr=setup.lr, weight_decay=setup.weight_decay,
                                betas=setup.betas)
    schedule = WarmupPolyDecay(setup.lr, setup.steps, setup.warmup_steps, power=DECAY_POWER[setup.decay])
    return optimizer, schedule


def train_config(setup: PretrainingSetup) -> TrainConfig:
    """How long and how the trainer trains, logs, evaluates and saves."""
    return TrainConfig(
        max_steps=setup.steps, max_minutes=setup.minutes, accumulate=setup.accumulate, clip_norm=setup.clip_norm,
        log_every=setup.log_every, eval_every=setup.eval_every, eval_batches=setup.eval_batches,
        save_every=setup.save_every, keep_checkpoints=setup.keep, out_dir=setup.out,
        bf16=setup.bf16, compile=setup.compile, progress=not setup.quiet, echo=not setup.quiet)


def build_trainer(setup: PretrainingSetup, model, batches, val_batches=None, dist=None) -> Trainer:
    """A Trainer of `model` on `batches` with the setup's objective, optimizer, schedule and loop settings."""
    optimizer, schedule = build_optimization(setup, model)
    return Trainer(model, optimizer, schedule, batches, train_config(setup), val_batches=val_batches, dist=dist,
                   objective=build_objective(setup))
