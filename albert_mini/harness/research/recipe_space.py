"""What a recipe probe varies (`Recipe`) and the data every probe shares: the Austen splits and the held-out sets.

A Recipe holds one pretraining setup (albert_mini.training.setup) and what a setup cannot say before a budget is
known; `Recipe.setup` gives the PretrainingSetup a probe trains with, so the probes build their schedule, model,
loss and optimizer with the same builders as the command line and the experiments (albert_mini.training.run).
Used by the recipe search (albert_mini.harness.research.recipe_search), its results builder and the controls.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from ...errors import UsageError
from ...model.albert import AlbertForPreTraining
from ...model.config import AlbertConfig
from ...text.batches import PretrainingBatches, build_pretraining_dataset, tokenize_documents
from ...text.corpus import load_corpus
from ...text.tokenizer import Tokenizer
from ...training import run
from ...training.setup import PretrainingSetup, in_process
from ..experiments.data import HELD_OUT_SEED

SAMPLE_SEED = 7  # the training sample: the same for every probe (held-out masks: the experiments' HELD_OUT_SEED)


# A recipe's record (the "recipe" of data/results/recipe_search/*.json) and its `--set NAME=VALUE` use these names,
# in this order. Most are PretrainingSetup fields; the model's sizes are AlbertConfig fields under shorter names.
RECORD_NAMES = ("optimizer", "lr", "betas", "warmup", "seq_len", "batch_size", "mask_prob", "ngram", "dropout",
                "sentence_weight", "mlm_weight", "task", "clip_norm", "weight_decay", "output_bias", "layers",
                "hidden", "embedding", "heads", "layer_norm_eps", "initializer_range", "decay", "position_init",
                "long_seq_len", "long_fraction", "seed", "preset")
SIZES = {"layers": "num_hidden_layers", "hidden": "hidden_size", "embedding": "embedding_size",
         "heads": "num_attention_heads", "layer_norm_eps": "layer_norm_eps", "initializer_range": "initializer_range",
         "dropout": "hidden_dropout_prob"}
OWN = ("warmup", "long_seq_len", "long_fraction")  # what a setup does not say: see Recipe
# The recipe the shipped classroom model was trained with, where it differs from a setup's defaults; every size is
# given, so that a recipe has one setup however its sizes were given (its record, or only those that change).
CLASSROOM = dict(lr=5e-3, warmup=100, dropout=0.0, layers=6, hidden=256, embedding=128, heads=4,
                 layer_norm_eps=1e-12, initializer_range=0.02)


@dataclass(frozen=True)
class Recipe:
    """What a probe varies: a pretraining setup, and what a setup does not say for a budget not yet known.

    `base` is the setup of one step at `seq_len` (its model sizes in `config`); `warmup` is capped at the steps a
    budget gives; `long_seq_len` > 0 adds a last phase at that length for `long_fraction` of the tokens. Built
    from the record's names with `Recipe.of`; the defaults are the classroom model's recipe.
    """

    base: PretrainingSetup
    warmup: int = 100
    long_seq_len: int = 0
    long_fraction: float = 0.1

    @classmethod
    def of(cls, **settings) -> Recipe:
        """The recipe of `settings` (RECORD_NAMES, the classroom recipe for the rest); UsageError naming a field."""
        unknown = sorted(set(settings) - set(RECORD_NAMES))
        if unknown:
            raise UsageError(f"recipe: no field(s) {', '.join(unknown)}; the fields are {', '.join(RECORD_NAMES)}")
        given = {**CLASSROOM, **settings}
        own = {name: given.pop(name) for name in OWN if name in given}
        sizes = {SIZES[name]: given.pop(name) for name in list(given) if name in SIZES}
        sizes["attention_probs_dropout_prob"] = sizes["hidden_dropout_prob"]
        sizes["intermediate_size"] = 4 * sizes["hidden_size"]
        config = tuple(f"{key}={value}" for key, value in sizes.items())
        seq_len, mask_prob = given.get("seq_len", 128), given.get("mask_prob", 0.15)
        try:
            base = in_process(steps=1, config=config, max_predictions=max(20, math.ceil(mask_prob * seq_len)),
                              **given)
        except UsageError as error:
            fields = re.sub(r"--([a-z-]+)", lambda m: m.group(1).replace("-", "_"), str(error))  # flags as fields
            raise UsageError(f"recipe: {fields}") from None
        return cls(base, **own)

    def record(self) -> dict:
        """The recipe under RECORD_NAMES, as the records hold it."""
        config = self.config()
        values = {name: getattr(config, field) for name, field in SIZES.items()}
        values.update(warmup=self.warmup, long_seq_len=self.long_seq_len, long_fraction=self.long_fraction)
        return {name: values[name] if name in values else getattr(self.base, name) for name in RECORD_NAMES}

    def replace(self, **changes) -> Recipe:
        """A copy with some fields (RECORD_NAMES) changed, checked again."""
        return Recipe.of(**{**self.record(), **changes})

    def config(self) -> AlbertConfig:
        return self.base.model_config()

    def steps_for(self, tokens: float) -> tuple[int, int]:
        """(steps at seq_len, steps at long_seq_len) that spend `tokens` training tokens."""
        batch, seq_len = self.base.batch_size, self.base.seq_len
        if not self.long_seq_len:
            return int(tokens // (batch * seq_len)), 0
        short_tokens = tokens * (1 - self.long_fraction)
        return int(short_tokens // (batch * seq_len)), int((tokens - short_tokens) // (batch * self.long_seq_len))

    def setup(self, steps: int, long_steps: int = 0) -> PretrainingSetup:
        """The probe's pretraining setup: `steps` at seq_len, then `long_steps` at long_seq_len (same batch size)."""
        warmup = min(self.warmup, steps + long_steps)
        if not long_steps:
            return self.base.replace(steps=steps, warmup=warmup)
        return self.base.replace(steps=steps + long_steps, warmup=warmup, seq_len=self.long_seq_len,
                                 short_seq_len=self.base.seq_len, short_fraction=steps / (steps + long_steps),
                                 short_batch_size=self.base.batch_size)


def build_model(recipe: Recipe) -> AlbertForPreTraining:
    """The recipe's model, drawn from its seed, with the output bias and position table it asks for."""
    return run.build_model(recipe.setup(1), train_documents=documents("train"))


def nano_recipe(**changes) -> Recipe:
    """The albert-nano sizes (2 layers, H 64, E 32): what the fast tests and the chapters' live controls train."""
    return Recipe.of(**{"preset": "albert-nano", "layers": 2, "hidden": 64, "embedding": 32, "heads": 2, **changes})


def parse_settings(items: list[str]) -> Recipe:
    """A Recipe from `field=value` strings, e.g. ["optimizer=adamw", "betas=0.9,0.98"]."""
    defaults = Recipe.of().record()  # each field's type is its default's
    changes = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or key not in defaults:
            raise UsageError(f"--set takes field=value with a Recipe field ({', '.join(RECORD_NAMES)}); got {item!r}")
        default = defaults[key]
        try:
            if key == "betas":
                value = tuple(float(x) for x in text.split(","))
                if len(value) != 2:
                    raise ValueError(text)
            elif isinstance(default, int) and not isinstance(default, bool):
                value = int(float(text))
            else:
                value = type(default)(text)
        except ValueError:
            kind = "two numbers like 0.9,0.98" if key == "betas" else type(default).__name__
            raise UsageError(f"--set {key}= needs {kind}, got {text!r}") from None
        changes[key] = value
    return Recipe.of(**changes)


@functools.cache
def documents(split: str):
    """An Austen split tokenized with the committed tokenizer, once per process."""
    return tokenize_documents(load_corpus("austen", split), Tokenizer.default())


def dataset(split: str, recipe: Recipe, task: str, seed: int, dynamic: bool, mask_prob: float | None = None,
            max_documents: int | None = None):
    setup = recipe.base
    p = setup.mask_prob if mask_prob is None else mask_prob
    docs = (documents(split) if max_documents is None
            else tokenize_documents(load_corpus("austen", split)[:max_documents], Tokenizer.default()))
    return build_pretraining_dataset(docs, Tokenizer.default(), task, setup.seq_len, seed=seed, dynamic=dynamic,
                                     masked_lm_prob=p, ngram=setup.ngram,
                                     max_predictions=max(20, math.ceil(p * setup.seq_len)))


def held_out(recipe: Recipe, seq_len: int | None = None, batches: int | None = None, split: str = "validation",
             max_documents: int | None = None) -> list[dict]:
    """Static held-out batches of 32 with ALBERT's masking (15% n-grams) and SOP labels; all of them by default."""
    if seq_len is not None:
        recipe = recipe.replace(seq_len=seq_len)
    ds = dataset(split, recipe, "sop", HELD_OUT_SEED, dynamic=False, mask_prob=0.15, max_documents=max_documents)
    source = PretrainingBatches(ds, 32)
    n = source.batches_per_epoch() if batches is None else min(batches, source.batches_per_epoch())
    return source.take(n)


def train_sample(recipe: Recipe, batches: int = 8) -> list[dict]:
    """Fixed training-split batches masked like the held-out ones: the train/held-out gap."""
    ds = dataset("train", recipe, "sop", SAMPLE_SEED, dynamic=False, mask_prob=0.15)
    return PretrainingBatches(ds, 32).take(batches)

