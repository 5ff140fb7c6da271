"""Time to quality: held-out MLM and SOP accuracy against training CPU-minutes, the old recipe against the new.

`race` trains both recipes in one process, alternating slices of a few minutes, so both see the same machine
and the same background load; each is evaluated on the same held-out batches at the end of every slice.
`build_results` turns two run directories' metrics.jsonl (any two runs of the pretraining CLI, e.g. the
shipped classroom model and a new one) into data/results/time_to_quality.json and its figure. The figure and the
race's report are the library's readers of these files (albert_mini.study.time_to_quality).

    python benchmarks/time_to_quality.py --minutes 15 --out runs/ttq
    albert-mini time-to-quality results OLD_RUN_DIR NEW_RUN_DIR --overwrite   # rewrites the shipped results

Both results record the command line that made them and the git revision.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import torch

from ...errors import UsageError
from ...safe_files import atomic_write_bytes, atomic_write_text
from ...study.time_to_quality import figure
from ...training.distributed import DistInfo
from ...training.run import Run
from ...training.rundir import read_run
from ...training.setup import PretrainingSetup
from ..experiments.provenance import cpu_model, git_revision

# The 15-minute run of data/results/pretrain_albert_mini_sop_15min, and the same with BERT's short-then-long curriculum.
OLD = PretrainingSetup(preset="albert-mini", corpus="austen", task="sop", steps=1200, warmup=50, lr=5e-3,
                       batch_size=32, seq_len=128, eval_batches=16, eval_every=0, save_every=0, keep=1, quiet=True)
RECIPES = {"old": OLD, "new": OLD.replace(short_seq_len=64, short_fraction=0.9)}


def race(minutes: float, out: Path, slice_minutes: float = 1.0, recipes: dict | None = None, say=print,
         command: str | None = None) -> dict:
    """Train each recipe for `minutes` of its own training time, in alternating slices; returns their eval curves
    (with `command`, the command line that ran the race, and the git revision)."""
    if minutes <= 0 or slice_minutes <= 0:
        raise UsageError(f"--minutes and --slice-minutes must be > 0, got {minutes} and {slice_minutes}")
    recipes = recipes or RECIPES
    runs = {}
    try:
        for name, setup in recipes.items():
            run_setup = setup.replace(out=str(out / name), overwrite=True)
            runs[name] = Run.build(run_setup, DistInfo(), say=lambda *a, **k: None)
        curves = alternate(runs, minutes, slice_minutes, say)
    finally:
        for run in runs.values():
            run.close()
    summary = compare(curves["old"], curves["new"]) if {"old", "new"} <= set(curves) else None
    return {"minutes": minutes, "slice_minutes": slice_minutes, "machine": cpu_model(),
            "threads": torch.get_num_threads(), "command": command, "git_revision": git_revision(),
            "recipes": {name: " ".join(setup.to_argv()) for name, setup in recipes.items()}, "curves": curves,
            "summary": summary}


def alternate(runs: dict, minutes: float, slice_minutes: float, say) -> dict[str, list[dict]]:
    """Each run's held-out curve, trained in alternating slices of `slice_minutes` of its own training time."""
    curves = {name: [] for name in runs}
    budget = 0.0
    while budget < minutes:
        budget = min(minutes, budget + slice_minutes)
        for name, trainer in ((n, r.trainer) for n, r in runs.items()):  # same slice for each, one after the other
            trainer.config = dataclasses.replace(trainer.config, max_minutes=budget)
            result = trainer.train()
            if result.eval is not None and (not curves[name] or curves[name][-1]["step"] != result.step):
                point = {"step": result.step, "minutes": trainer.elapsed / 60, "tokens": trainer.tokens_seen,
                         "mlm_acc": result.eval["mlm_acc"], "sentence_acc": result.eval.get("sentence_acc")}
                curves[name].append(point)
                say(f"{name}: {point['minutes']:.2f} min, step {point['step']}, held-out MLM {point['mlm_acc']:.4f}, "
                    f"SOP {point['sentence_acc']:.4f}")
            if result.stop_reason != "max_minutes":
                break
    return curves


def minutes_to_reach(curve: list[dict], target: float, axis: str = "minutes") -> float | None:
    """When (in `axis`: minutes or tokens) a curve's held-out MLM reaches `target` for good: the crossing (linearly
    interpolated) after which every later evaluation stays at or above it. The untrained start does not count."""
    if not curve or curve[-1]["mlm_acc"] < target:
        return None
    i = len(curve) - 1
    while i > 0 and curve[i - 1]["mlm_acc"] >= target:
        i -= 1
    if i == 0:
        return curve[0][axis]
    before, after = curve[i - 1], curve[i]
    share = (target - before["mlm_acc"]) / (after["mlm_acc"] - before["mlm_acc"])
    return before[axis] + share * (after[axis] - before[axis])


def compare(old: list[dict], new: list[dict]) -> dict | None:
    """Final accuracies of both, and how much sooner the new recipe reaches the old one's final MLM accuracy."""
    if not old or not new:
        return None
    target = old[-1]["mlm_acc"]
    reached = minutes_to_reach(new, target)
    return {"old_minutes": old[-1]["minutes"], "new_minutes": new[-1]["minutes"],
            "old_mlm": target, "new_mlm": new[-1]["mlm_acc"], "mlm_ratio": new[-1]["mlm_acc"] / target,
            "old_sop": old[-1].get("sentence_acc"), "new_sop": new[-1].get("sentence_acc"),
            "new_minutes_to_old_final_mlm": reached,
            "speedup": old[-1]["minutes"] / reached if reached else None}


# ---------------------------------------------------------------------------------------------- from run directories
def build_results(old_dir: Path, new_dir: Path, machine: str | None = None, command: str | None = None) -> dict:
    """Both runs' held-out curves against training minutes and their comparison at the old run's last evaluation;
    `machine` is where the runs trained (default: this one), `command` the command line that builds the results."""
    runs = {name: read_run(folder) for name, folder in (("old", old_dir), ("new", new_dir))}
    old_curve, new_curve = runs["old"][1], runs["new"][1]
    # Compare at the same time: the new run's curve up to the old run's last minute (or all of it, if shorter).
    horizon = min(old_curve[-1]["minutes"], new_curve[-1]["minutes"])
    clipped = {n: [p for p in c if p["minutes"] <= horizon + 1e-9] for n, c in (("old", old_curve), ("new", new_curve))}
    return {"about": "held-out MLM and SOP accuracy (the run's own evaluation batches) against training minutes "
                     "(elapsed_s of metrics.jsonl, evaluations included)",
            "command": command, "git_revision": git_revision(),
            "machine": machine or cpu_model(),
            "runs": {name: {"dir": str(folder), "settings": runs[name][0], "curve": runs[name][1]}
                     for name, folder in (("old", old_dir), ("new", new_dir))},
            "at_common_minutes": {"minutes": horizon, **(compare(clipped["old"], clipped["new"]) or {})},
            "tokens_to_old_final_mlm": tokens_to_reach_old_final(old_curve, new_curve)}


def tokens_to_reach_old_final(old: list[dict], new: list[dict]) -> dict:
    """Training tokens each run needed for the old run's final held-out MLM accuracy: fair under any machine load."""
    target = old[-1]["mlm_acc"]
    new_tokens = minutes_to_reach(new, target, axis="tokens")
    return {"target_mlm": target, "old_tokens": old[-1]["tokens"], "new_tokens": new_tokens,
            "ratio": old[-1]["tokens"] / new_tokens if new_tokens else None}


def write_results(old_dir: Path, new_dir: Path, out: Path, figure_out: Path, command: str,
                  machine: str | None = None) -> dict:
    """Build the results of the two runs, write them to `out` and their figure to `figure_out` (each atomically;
    whether they may be written is the write rule's, checked by the command first)."""
    results = build_results(old_dir, new_dir, machine, command)
    fig = figure(results)
    png = io.BytesIO()
    fig.savefig(png, dpi=120, format="png")
    atomic_write_text(out, json.dumps(results, indent=1) + "\n")
    atomic_write_bytes(figure_out, png.getvalue())
    return results

