"""What a recipe probe varies (`Recipe`) and the data every probe shares: the Austen splits and the held-out sets.

A Recipe is a probe's view of the one pretraining setup (albert_mini.training.setup): `Recipe.setup` gives the
PretrainingSetup a probe trains with, so the probes build their schedule, model, loss and optimizer with the same
builders as the command line and the experiments (albert_mini.training.build). Used by the recipe search
(albert_mini.harness.research.recipe_search), its results builder and the controls.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass

from ...errors import UsageError
from ...model.albert import AlbertForPreTraining
from ...model.config import PRESETS, AlbertConfig, ConfigError
from ...text.batches import PretrainingBatches, build_pretraining_dataset, tokenize_documents
from ...text.corpus import load_corpus
from ...text.tokenizer import Tokenizer
from ...training import build
from ...training.setup import PretrainingSetup, in_process
from ..experiments.data import HELD_OUT_SEED

SAMPLE_SEED = 7  # the training sample: the same for every probe (held-out masks: the experiments' HELD_OUT_SEED)


@dataclass(frozen=True)
class Recipe:
    """Everything a probe varies; the defaults are the recipe the shipped classroom model was trained with."""

    optimizer: str = "lamb"
    lr: float = 5e-3
    betas: tuple[float, float] = (0.9, 0.999)
    warmup: int = 100
    seq_len: int = 128
    batch_size: int = 32
    mask_prob: float = 0.15
    ngram: int = 3
    dropout: float = 0.0
    sentence_weight: float = 1.0
    mlm_weight: float = 1.0
    task: str = "sop"
    clip_norm: float = 1.0  # a huge value (1e9) means no clipping
    weight_decay: float = 0.01
    output_bias: str = "unigram"
    layers: int = 6
    hidden: int = 256
    embedding: int = 128
    heads: int = 4
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02
    decay: str = "linear"  # linear to 0 at the end of the budget, or "constant" after warmup
    position_init: str = "normal"  # "sinusoidal": Vaswani et al.'s table scaled to initializer_range
    long_seq_len: int = 0  # >0: a second phase at this length for the last `long_fraction` of the tokens
    long_fraction: float = 0.1
    seed: int = 0
    preset: str = "albert-mini"  # the sizes above override it; tests use albert-nano

    def __post_init__(self):
        """Checked where every setup is: a recipe is valid when its model and its pretraining setup are."""
        if self.preset not in PRESETS:
            raise UsageError(f"recipe: preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        try:
            self.config()
        except ConfigError as error:
            raise UsageError(f"recipe: {error}") from None
        try:
            self.setup(1)
        except UsageError as error:
            fields = re.sub(r"--([a-z-]+)", lambda m: m.group(1).replace("-", "_"), str(error))  # flags as fields
            raise UsageError(f"recipe: {fields}") from None

    def config(self) -> AlbertConfig:
        return AlbertConfig.from_preset(
            self.preset, num_hidden_layers=self.layers, hidden_size=self.hidden, embedding_size=self.embedding,
            num_attention_heads=self.heads, intermediate_size=4 * self.hidden, hidden_dropout_prob=self.dropout,
            attention_probs_dropout_prob=self.dropout, layer_norm_eps=self.layer_norm_eps,
            initializer_range=self.initializer_range)

    def steps_for(self, tokens: float) -> tuple[int, int]:
        """(steps at seq_len, steps at long_seq_len) that spend `tokens` training tokens."""
        if not self.long_seq_len:
            return int(tokens // (self.batch_size * self.seq_len)), 0
        short_tokens = tokens * (1 - self.long_fraction)
        return (int(short_tokens // (self.batch_size * self.seq_len)),
                int((tokens - short_tokens) // (self.batch_size * self.long_seq_len)))

    def setup(self, steps: int, long_steps: int = 0) -> PretrainingSetup:
        """The probe's pretraining setup: `steps` at seq_len, then `long_steps` at long_seq_len (same batch size)."""
        common = dict(
            preset=self.preset, task=self.task, seed=self.seed, batch_size=self.batch_size, lr=self.lr,
            warmup=min(self.warmup, steps + long_steps), optimizer=self.optimizer, betas=tuple(self.betas),
            weight_decay=self.weight_decay, clip_norm=self.clip_norm, output_bias=self.output_bias,
            position_init=self.position_init, decay=self.decay, mask_prob=self.mask_prob, ngram=self.ngram,
            max_predictions=max(20, math.ceil(self.mask_prob * self.seq_len)), mlm_weight=self.mlm_weight,
            sentence_weight=self.sentence_weight)
        if not long_steps:
            return in_process(steps=steps, seq_len=self.seq_len, **common)
        return in_process(steps=steps + long_steps, seq_len=self.long_seq_len, short_seq_len=self.seq_len,
                          short_fraction=steps / (steps + long_steps), short_batch_size=self.batch_size,
                          **common)


def build_model(recipe: Recipe) -> AlbertForPreTraining:
    """The recipe's model, drawn from its seed, with the output bias and position table it asks for."""
    return build.build_model(recipe.setup(1), recipe.config(), documents("train"))


def nano_recipe(**changes) -> Recipe:
    """The albert-nano sizes (2 layers, H 64, E 32): what the fast tests and the chapters' live controls train."""
    return Recipe(**{"preset": "albert-nano", "layers": 2, "hidden": 64, "embedding": 32, "heads": 2, **changes})


def parse_settings(items: list[str]) -> Recipe:
    """A Recipe from `field=value` strings, e.g. ["optimizer=adamw", "betas=0.9,0.98"]."""
    fields = {f.name: f for f in dataclasses.fields(Recipe)}
    changes = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or key not in fields:
            raise UsageError(f"--set takes field=value with a Recipe field ({', '.join(fields)}); got {item!r}")
        default = fields[key].default
        try:
            if key == "betas":
                value = tuple(float(x) for x in text.split(","))
                if len(value) != 2:
                    raise ValueError(text)
            elif isinstance(default, int):
                value = int(float(text))
            else:
                value = type(default)(text)
        except ValueError:
            kind = "two numbers like 0.9,0.98" if key == "betas" else type(default).__name__
            raise UsageError(f"--set {key}= needs {kind}, got {text!r}") from None
        changes[key] = value
    return Recipe(**changes)


@functools.cache
def documents(split: str):
    """An Austen split tokenized with the committed tokenizer, once per process."""
    return tokenize_documents(load_corpus("austen", split), Tokenizer.default())


def dataset(split: str, recipe: Recipe, task: str, seed: int, dynamic: bool, mask_prob: float | None = None,
            max_documents: int | None = None):
    p = recipe.mask_prob if mask_prob is None else mask_prob
    docs = (documents(split) if max_documents is None
            else tokenize_documents(load_corpus("austen", split)[:max_documents], Tokenizer.default()))
    return build_pretraining_dataset(docs, Tokenizer.default(), task, recipe.seq_len, seed=seed, dynamic=dynamic,
                                     masked_lm_prob=p, ngram=recipe.ngram,
                                     max_predictions=max(20, math.ceil(p * recipe.seq_len)))


def held_out(recipe: Recipe, seq_len: int | None = None, batches: int | None = None, split: str = "validation",
             max_documents: int | None = None) -> list[dict]:
    """Static held-out batches of 32 with ALBERT's masking (15% n-grams) and SOP labels; all of them by default."""
    if seq_len is not None:
        recipe = dataclasses.replace(recipe, seq_len=seq_len)
    ds = dataset(split, recipe, "sop", HELD_OUT_SEED, dynamic=False, mask_prob=0.15, max_documents=max_documents)
    source = PretrainingBatches(ds, 32)
    n = source.batches_per_epoch() if batches is None else min(batches, source.batches_per_epoch())
    return source.take(n)


def train_sample(recipe: Recipe, batches: int = 8) -> list[dict]:
    """Fixed training-split batches masked like the held-out ones: the train/held-out gap."""
    ds = dataset("train", recipe, "sop", SAMPLE_SEED, dynamic=False, mask_prob=0.15)
    return PretrainingBatches(ds, 32).take(batches)

