"""The experiments' budget: training tokens per model, seeds, the FULL and FAST settings, and the models compared.

A Budget is a named set of overrides of the one pretraining setup (albert_mini.training.setup) and the sizes of
what is measured on each model: `Budget.setup` gives the PretrainingSetup every experiment run trains with, so the
experiments, the command line and the recipe probes share one schedule, one model builder and one loss.
`Budget.settings` is the run cache's key (runs.py), under the names the finished runs recorded: renaming or
removing one retires every finished run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...model.config import AlbertConfig, embedding_variant
from ...paths import REPO_ROOT
from ...settings import fast_mode
from ...training.setup import PretrainingSetup, defaults, in_process
from ..choices import SEEDS as SEEDS  # kept where the command line reads it without torch

# Training tokens per model, the one budget knob of each mode (`make experiments` is "full"; tests run "fast").
# Full: 512 steps of 32 x 128 tokens (2,097,152), half of them at 64 tokens: at 655,360 tokens (the budget before)
# every model of Tables 3-4 sat on the unigram plateau and every sentence head answered one class.
TOKENS_PER_MODEL = {"full": 512 * 32 * 128, "fast": 2 * 4 * 64}


# The settings a budget may override: those its runs' specs record (Budget.settings), so that whatever decides a run
# is in its cache key. Steps and warm-up follow from `tokens` and `warmup_fraction`.
OVERRIDABLE = ("batch_size", "seq_len", "short_seq_len", "short_fraction", "lr", "optimizer", "eval_batches")


def check_recorded(plan: str, overrides: dict, recorded: tuple[str, ...]) -> None:
    """Refuse an override of a setting the plan's runs do not record: it would change a run but not its key."""
    unrecorded = sorted(set(overrides) - set(recorded))
    if unrecorded:
        raise ValueError(f"{plan} overrides only {', '.join(recorded)} (what its runs' specs record), "
                         f"not {', '.join(unrecorded)}")


@dataclass(frozen=True)
class Budget:
    """Overrides of PretrainingSetup for every experiment run, and the sizes of what is measured on each model."""

    tokens: int  # training tokens per model: the setup's steps are tokens / (batch_size x seq_len)
    pretraining: dict = field(hash=False)  # PretrainingSetup fields (OVERRIDABLE) set otherwise than the CLI's
    # Warm-up steps as a share of the steps: a quarter (40 of 160). The CLI's 2.5% (the paper's 3,125 of 125,000
    # steps) gives 4 steps here, and after 4 or 16 warm-up steps (even at peak 1e-2) LAMB left no model of 160
    # steps off the unigram plateau (held-out MLM 6.8% = the unigram answer, every seed); with 40 the same run
    # reached 8.3% and rising.
    # Long runs warm up for 125 steps (5,000 x 2.5%): what counts is the number of steps, not the fraction.
    warmup_fraction: float = 0.25
    probe_train: int = 2048  # training-split instances a linear probe is fitted on
    probe_eval: int = 1024  # held-out instances a sentence task is scored on
    probe_steps: int = 300  # full-batch Adam steps of a linear probe
    max_documents: int | None = None  # use only the first chapters of each split (fast mode)

    def __post_init__(self):
        check_recorded("a budget", self.pretraining, OVERRIDABLE)
        self.setup()  # checked as every setup is, at the size its runs train at

    def setup(self, task: str = "sop", seed: int = 0) -> PretrainingSetup:
        """The pretraining setup of one experiment run: these overrides on the Austen chapters, no run folder."""
        shape = {**defaults(), **self.pretraining}
        steps = self.tokens // (shape["batch_size"] * shape["seq_len"])
        if steps < 1:
            raise ValueError(f"tokens={self.tokens} is less than one batch of {shape['batch_size']} x "
                             f"{shape['seq_len']}")
        return in_process(corpus="austen", task=task, seed=seed, steps=steps,
                          warmup=round(self.warmup_fraction * steps), log_every=max(1, steps // 20),
                          **self.pretraining)

    def settings(self) -> dict:
        """What a run's spec records of its budget (the cache key): the names and order of the finished runs."""
        s = self.setup()
        return {"tokens": self.tokens, "batch_size": s.batch_size, "seq_len": s.seq_len,
                "short_seq_len": s.short_seq_len, "short_fraction": s.short_fraction, "lr": s.lr,
                "warmup_fraction": self.warmup_fraction, "optimizer": s.optimizer, "eval_batches": s.eval_batches,
                "probe_train": self.probe_train, "probe_eval": self.probe_eval, "probe_steps": self.probe_steps,
                "max_documents": self.max_documents}

    def as_dict(self) -> dict:
        """The settings and what they imply (steps, warm-up, steps at the short length), as results record them."""
        s = self.setup()
        phases = s.phases()
        return {**self.settings(), "steps": s.steps, "warmup": s.warmup,
                "short_steps": phases[0].steps if len(phases) > 1 else 0}


# BERT's curriculum, as `pretrain --short-seq-len 64 --short-fraction 0.5`: the first half of the steps on sequences
# of 64 tokens (twice as many per batch: the same tokens per step), the rest at 32 x 128. 20 held-out batches: the
# validation chapters hold 21 batches of 32 x 128 tokens.
FULL = Budget(tokens=TOKENS_PER_MODEL["full"], warmup_fraction=0.1,
              pretraining={"short_seq_len": 64, "short_fraction": 0.5, "lr": 5e-3, "eval_batches": 20})
FAST = Budget(tokens=TOKENS_PER_MODEL["fast"],
              pretraining={"batch_size": 4, "seq_len": 64, "short_seq_len": 32, "short_fraction": 0.5, "lr": 5e-3,
                           "eval_batches": 1},
              probe_train=32, probe_eval=32, probe_steps=5, max_documents=6)


def current_budget() -> Budget:
    """FAST under ALBERT_MINI_FAST=1, FULL otherwise."""
    return FAST if fast_mode() else FULL


def results_dir() -> Path:
    """data/results in full mode; a git-ignored cache folder in fast mode."""
    return REPO_ROOT / ("cache/results-fast" if fast_mode() else "data/results")


def mini(**changes) -> AlbertConfig:
    """The classroom model, albert-mini, with some fields changed."""
    return AlbertConfig.from_preset("albert-mini", **changes)


def variant(sharing: str, embedding_size: int) -> AlbertConfig:
    """albert-mini with another E and sharing; with E = H there is no projection (so "none" at E = H is bert-mini)."""
    return embedding_variant(mini(), embedding_size, sharing).replace(
        embedding_projection=embedding_size != mini().hidden_size)


