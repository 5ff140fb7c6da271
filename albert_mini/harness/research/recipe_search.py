"""A pretraining-recipe search: probes at one token budget, one seed, one held-out set; every probe recorded.

    albert-mini recipe-search probe base --tokens 1.6e6 --threads 2 --out cache/recipe
    albert-mini recipe-search probe adamw-1e-3 --set optimizer=adamw lr=1e-3 betas=0.9,0.98
    albert-mini recipe-search control ctl-lamb --set seq_len=64 warmup=50 --steps 400
    albert-mini recipe-search results --records data/results/recipe_search

A probe is a `Recipe` (optimizer, rate, warmup, sequence length, masking rate, dropout, sentence-loss weight,
...) trained on the Austen training chapters for a fixed number of tokens. Every probe is scored the same way:
held-out MLM and SOP accuracy with ALBERT's masking (15% n-grams, seed 1) at 64 and at 128 tokens, the
training-split MLM accuracy on a fixed sample (a widening gap means the data, not the optimisation, limits the
model), and the collapse diagnostics of albert_mini.study.collapse.

A control trains the sentence loss alone (no MLM) on a label the network can certainly learn (segment A longer
than B), or on a fixed small set of real SOP pairs: it separates "the sentence path cannot learn" from "SOP is
hard at this scale".
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import torch

from ...errors import UsageError
from ...study.collapse import RULES, diagnose
from ...study.controls import train_sentence_path
from ...text.batches import PretrainingBatches
from ...text.tokenizer import Tokenizer
from ...training import run, run_data
from ...training.objectives import sentence_metrics_warning
from ...training.trainer import evaluate
from ..experiments.provenance import cpu_model, git_revision
from .recipe_results import build_results, write_results  # noqa: F401  (the results are built here too)
from .recipe_space import (  # noqa: F401  (the harness's names, importable from here)
    Recipe,
    build_model,
    dataset,
    documents,
    held_out,
    nano_recipe,
    parse_settings,
    train_sample,
)

HELD_OUT_LENGTHS = (64, 128)  # every probe is scored at both, whatever it trains at


def score(model, sets: dict, sample: list[dict]) -> dict:
    """Held-out metrics at every length (the probe's own first), the training sample, and the diagnostics."""
    by_len = {str(n): evaluate(model, b) for n, b in sets.items()}
    first = next(iter(sets.values()))
    return {"held_out_by_len": by_len, "train_sample": evaluate(model, sample),
            "diag": diagnose(model, first[0])}


def run_probe(name: str, recipe: Recipe, tokens: float, out_dir: Path | None = None, eval_points: int = 8,
              say=print, command: str | None = None) -> dict:
    """Train one recipe for `tokens` tokens, scored `eval_points` times; its record (naming `command`, the command
    line that ran it, and the git revision), also written when out_dir."""
    short_steps, long_steps = recipe.steps_for(tokens)
    steps = short_steps + long_steps
    if short_steps < 1:
        base = recipe.base
        raise UsageError(f"--tokens {tokens:g} is less than one batch of {base.batch_size} x {base.seq_len}")
    every = max(1, steps // eval_points)
    setup = recipe.setup(short_steps, long_steps).replace(log_every=max(1, every // 4))
    model = run.build_model(setup, train_documents=documents("train"))
    source = run_data.training_batches(setup, documents("train"), Tokenizer.default())
    lengths = (recipe.base.seq_len,) + tuple(n for n in HELD_OUT_LENGTHS if n != recipe.base.seq_len)
    sets = {n: held_out(recipe, seq_len=n) for n in lengths}
    sample = train_sample(recipe)
    trainer = run.build_trainer(setup, model, source)
    config = trainer.config
    curve, start = [], time.perf_counter()
    while trainer.step < steps:
        trainer.config = dataclasses.replace(config, max_steps=min(steps, trainer.step + every))
        trainer.train()
        point = {"step": trainer.step, "tokens": trainer.tokens_seen, "seconds": time.perf_counter() - start,
                 "train": {k: v for k, v in trainer.history[-1].items() if k != "type"}, **score(model, sets, sample)}
        point["held_out"] = point["held_out_by_len"][str(recipe.base.seq_len)]
        point["sentence_warning"] = sentence_metrics_warning(point["train"])  # loss and accuracy must agree
        curve.append(point)
        say(json.dumps({"probe": name, "step": trainer.step, "s": round(point["seconds"]),
                        **{f"mlm{n}": round(m["mlm_acc"], 4) for n, m in point["held_out_by_len"].items()},
                        "sop": round(point["held_out"]["sentence_acc"], 4),
                        "train_mlm": round(point["train_sample"]["mlm_acc"], 4),
                        "cos": round(point["diag"]["position_cosine"][-1], 3),
                        "ent": round(min(point["diag"]["entropy"]), 2)}))
    final = curve[-1]["held_out"]
    record = {"name": name, "recipe": recipe.record(), "tokens": trainer.tokens_seen, "steps": steps,
              "seconds": time.perf_counter() - start, "threads": torch.get_num_threads(), "cpu": cpu_model(),
              "command": command, "git_revision": git_revision(),
              "held_out_pairs": sum(int(b["sentence_order_label"].numel()) for b in sets[recipe.base.seq_len]),
              "held_out_mlm": final["mlm_acc"], "held_out_sop": final["sentence_acc"],
              "held_out_sop_loss": final["sentence_loss"], "curve": curve,
              "train_history": [h for h in trainer.history if h["type"] == "train"]}
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


# ---------------------------------------------------------------------------------------------- controls
# The loop is the library's (albert_mini.study.controls); a control here builds the recipe's model and pairs.
def run_control(name: str, recipe: Recipe, steps: int, out_dir: Path | None = None, rule: str = "longer",
                every: int = 10, train_pairs: int | None = None, max_documents: int | None = None,
                held_out_batches: int | None = 8, say=print, command: str | None = None) -> dict:
    """Train the recipe's sentence path alone (no MLM loss) with albert_mini.study.controls.train_sentence_path;
    log loss, accuracy and the collapse diagnostics.

    rule 'longer': label = segment A longer than B, on fresh SOP pairs every step. rule 'sop': the real SOP
    label; with `train_pairs`, the same fixed pairs are revisited every epoch (can the path fit what it has
    seen?). `max_documents` keeps only the first chapters of each split (fast tests).
    """
    if rule not in RULES + ("sop",):
        raise UsageError(f"--rule must be one of {', '.join(RULES + ('sop',))}, got {rule!r}")
    if train_pairs is not None and train_pairs < recipe.base.batch_size:
        raise UsageError(f"--train-pairs {train_pairs} is fewer than one batch of {recipe.base.batch_size}")
    model = build_model(recipe.replace(output_bias="zeros"))  # MLM head unused
    ds = dataset("train", recipe, "sop", recipe.base.seed, dynamic=train_pairs is None, max_documents=max_documents)
    source = PretrainingBatches(ds, recipe.base.batch_size)
    fixed = source.take(train_pairs // recipe.base.batch_size) if train_pairs else None
    val = held_out(recipe, batches=held_out_batches, max_documents=max_documents)
    start = time.perf_counter()
    log = train_sentence_path(model, recipe.setup(steps), val, batches=None if fixed else source, fixed=fixed,
                              rule=rule, every=every, say=say, name=name)
    record = {"name": name, "rule": rule, "recipe": recipe.record(), "steps": steps,
              "train_pairs": train_pairs, "seconds": time.perf_counter() - start, "cpu": cpu_model(),
              "threads": torch.get_num_threads(), "command": command, "git_revision": git_revision(), "log": log}
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"control-{name}.json").write_text(json.dumps(record) + "\n")
    return record
