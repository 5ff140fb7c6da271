"""The run cache's guard: short seeded runs of every kind of cached run, whose numbers must not move.

The cache keys a run on its settings and its kind's NUMERICS_VERSION (runs.py), never on source code, so a comment
or a refactor keeps hours of finished runs. The other side of that bargain is this guard: a change that alters
what a kind computes changes these values, tests/study/test_numerics_guard.py fails, and the fix is to bump that
kind's version (retiring its cached runs) and record the new values:

    albert-mini numerics --write
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch

from ...paths import REPO_ROOT
from .runs import NUMERICS_VERSION

GUARD_FILE = REPO_ROOT / "tests" / "study" / "numerics_guard.json"


def _losses(curve: list[dict]) -> list[float]:
    return [round(float(point["loss"]), 6) for point in curve]


def guard_values() -> dict[str, dict]:
    """kind -> {"version", "values"}: a few steps of each kind on the fast settings, on the CPU."""
    from ...model.albert import AlbertForPreTraining
    from ...tasks.finetuning import FinetuneSettings
    from .budget import FAST, mini
    from .finetune import Finetuning, finetune_one
    from .measure import Pretraining, measure
    from .trunk import FAST_BRANCH, FAST_TRUNK, train_branch, train_scratch, train_trunk, trunk_checkpoint

    torch.set_num_threads(1)  # one thread: the same reduction order on every machine
    values = {}
    record = measure(Pretraining("guard", mini(), "sop", 0), FAST)
    values["pretraining"] = _losses(record["curve"]) + [record["mlm_acc"], record["sop"]["accuracy"]]
    with tempfile.TemporaryDirectory() as tmp:
        trunk = train_trunk(FAST_TRUNK, Path(tmp))
        values["trunk"] = _losses(trunk["curve"]) + [p["mlm_128"]["loss"] for p in trunk["probes"]]
        checkpoint = trunk_checkpoint(Path(tmp), FAST_TRUNK.stop)
        branch = train_branch(checkpoint, "sop", 0, FAST_TRUNK, FAST_BRANCH, FAST)
        values["branch"] = _losses(branch["curve"]) + [
            branch["mlm_128"]["loss"], branch["sentence_64"]["sop_unmasked"]["head"]["accuracy"],
            branch["downstream"]["austen-mc"]["accuracy"]]
    scratch = train_scratch("nsp", 0, FAST_TRUNK)
    values["scratch"] = _losses(scratch["curve"]) + [scratch["mlm_64"]["loss"]]
    tuned = finetune_one(Finetuning("austen-mc", "random", 0, FinetuneSettings(
        steps=2, batch_size=2, seed=0, max_train_examples=8, max_eval_examples=8)), AlbertForPreTraining(mini()))
    values["finetuning"] = [round(float(tuned["final_train_loss"]), 6), tuned["accuracy"]]
    return {kind: {"version": NUMERICS_VERSION[kind], "values": v} for kind, v in values.items()}


def write_guard(values: dict[str, dict] | None = None) -> Path:
    """Record `values` (default: `guard_values()`, measured now) in GUARD_FILE, the values the test checks."""
    GUARD_FILE.write_text(json.dumps(guard_values() if values is None else values, indent=1) + "\n")
    return GUARD_FILE
