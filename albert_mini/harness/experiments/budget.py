"""The experiments' budget: training tokens per model, seeds, the FULL and FAST settings, and the models compared.

A Budget is an override of the one pretraining setup (albert_mini.training.setup): `Budget.setup` gives the
PretrainingSetup every experiment run trains with, so the experiments, the command line and the recipe probes
share one schedule, one model builder and one loss. Its fields are the run cache's key (runs.py): renaming or
removing one retires every finished run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ...model.config import AlbertConfig, embedding_variant
from ...paths import REPO_ROOT
from ...settings import fast_mode
from ...training.setup import Phase, PretrainingSetup, curriculum, in_process

# Training tokens per model, the one budget knob of each mode (`make experiments` is "full"; tests run "fast").
# Full: 512 steps of 32 x 128 tokens (2,097,152), half of them at 64 tokens: at 655,360 tokens (the budget before)
# every model of Tables 3-4 sat on the unigram plateau and every sentence head answered one class.
TOKENS_PER_MODEL = {"full": 512 * 32 * 128, "fast": 2 * 4 * 64}
SEEDS = (0, 1, 2)  # every model of every experiment is trained once per seed


@dataclass(frozen=True)
class Budget:
    """Everything that decides a pretraining run besides the model, the task and the seed."""

    tokens: int  # training tokens per model (steps = tokens / (batch_size x seq_len))
    batch_size: int = 32
    seq_len: int = 128
    # BERT's curriculum, as `pretrain --short-seq-len 64 --short-fraction 0.9`: the first 90% of the steps on
    # sequences of 64 tokens (twice as many per batch: the same tokens per step), the rest at seq_len.
    short_seq_len: int | None = 64
    short_fraction: float = 0.9
    lr: float = 5e-3
    # A quarter of the steps (40 of 160). The CLI's 2.5% (the paper's 3,125 of 125,000 steps) gives 4 steps here,
    # and after 4 or 16 warm-up steps (even at peak 1e-2) LAMB left no model of 160 steps off the unigram
    # plateau (held-out MLM 6.8% = the unigram answer, every seed); with 40 the same run reached 8.3% and rising.
    # Long runs warm up for 125 steps (5,000 x 2.5%): what counts is the number of steps, not the fraction.
    warmup_fraction: float = 0.25
    optimizer: str = "lamb"
    eval_batches: int = 16  # held-out batches of batch_size x seq_len for MLM accuracy and smoothness
    probe_train: int = 2048  # training-split instances a linear probe is fitted on
    probe_eval: int = 1024  # held-out instances a sentence task is scored on
    probe_steps: int = 300  # full-batch Adam steps of a linear probe
    max_documents: int | None = None  # use only the first chapters of each split (fast mode)

    def __post_init__(self):
        if self.tokens < self.batch_size * self.seq_len:
            raise ValueError(f"tokens={self.tokens} is less than one batch of {self.batch_size} x {self.seq_len}")
        if self.short_seq_len is not None and (self.seq_len % self.short_seq_len or not 0 < self.short_fraction < 1):
            raise ValueError(f"short_seq_len {self.short_seq_len} must divide seq_len {self.seq_len} and "
                             f"short_fraction {self.short_fraction} must be in (0, 1)")

    @property
    def steps(self) -> int:
        return self.tokens // (self.batch_size * self.seq_len)

    @property
    def warmup(self) -> int:
        return round(self.warmup_fraction * self.steps)

    def phases(self) -> tuple[Phase, ...]:
        """The schedule: the one curriculum of albert_mini.training.setup (same tokens per step in both phases)."""
        return curriculum(self.steps, self.seq_len, self.batch_size, self.short_seq_len, self.short_fraction)

    @property
    def short_steps(self) -> int:
        """Steps trained at short_seq_len before the switch (0 without the curriculum)."""
        phases = self.phases()
        return phases[0].steps if len(phases) > 1 else 0

    @property
    def short_batch_size(self) -> int:
        return self.phases()[0].batch_size

    def setup(self, task: str, seed: int) -> PretrainingSetup:
        """The pretraining setup of one experiment run: this budget on the Austen chapters, no run folder."""
        return in_process(
            corpus="austen", task=task, seed=seed, steps=self.steps, batch_size=self.batch_size,
            seq_len=self.seq_len, short_seq_len=self.short_seq_len, short_fraction=self.short_fraction, lr=self.lr,
            warmup=self.warmup, optimizer=self.optimizer, eval_batches=self.eval_batches,
            log_every=max(1, self.steps // 20))

    def as_dict(self) -> dict:
        """The settings and what they imply (steps, warm-up), as recorded with every result."""
        return {**dataclasses.asdict(self), "steps": self.steps, "warmup": self.warmup,
                "short_steps": self.short_steps}


# 20 held-out batches: the validation chapters hold 21 batches of 32 x 128 tokens.
FULL = Budget(tokens=TOKENS_PER_MODEL["full"], short_fraction=0.5, warmup_fraction=0.1, eval_batches=20)
FAST = Budget(tokens=TOKENS_PER_MODEL["fast"], batch_size=4, seq_len=64, short_seq_len=32, short_fraction=0.5,
              eval_batches=1, probe_train=32, probe_eval=32, probe_steps=5, max_documents=6)


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


