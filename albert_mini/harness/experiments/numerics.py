"""The run cache's guard: short seeded runs of every kind of cached run, whose numbers must not move.

The cache keys a run on its settings and its kind's NUMERICS_VERSION (runs.py), never on source code, so a comment
or a refactor keeps hours of finished runs. The other side of that bargain is this guard: a change that alters
what a kind computes changes these values, tests/study/test_numerics_guard.py fails, and the fix is to bump that
kind's version (retiring its cached runs) and record the new values:

    albert-mini numerics --write

`--write` says which values changed and by how much. Values that differ from the recorded ones only within the
guard's own tolerance (TOLERANCE, what the test allows) are this machine's last digits, not a change: they are kept
as recorded unless --force, and so are values that moved while their kind's version did not (the cached runs of
that kind would then stand for other numbers: bump the version first).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ...safe_files import atomic_write_text
from ..choices import GUARD_FILE
from .runs import NUMERICS_VERSION

# Relative: other CPUs sum in another order (about 1e-6 here); any change of data, masks or initialisation moves
# these values by far more. tests/study/test_numerics_guard.py checks with it; `--write` keeps what stays within it.
TOLERANCE = 1e-4


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
        values["supervised"] = supervised_values(checkpoint)
    values["language"] = language_values()
    scratch = train_scratch("nsp", 0, FAST_TRUNK)
    values["scratch"] = _losses(scratch["curve"]) + [scratch["mlm_64"]["loss"]]
    tuned = finetune_one(Finetuning("austen-mc", "random", 0, FinetuneSettings(
        steps=2, batch_size=2, seed=0, max_train_examples=8, max_eval_examples=8)), AlbertForPreTraining(mini()))
    values["finetuning"] = [round(float(tuned["final_train_loss"]), 6), tuned["accuracy"]]
    return {kind: {"version": NUMERICS_VERSION[kind], "values": v} for kind, v in values.items()}


def supervised_values(checkpoint: Path) -> list[float]:
    """The supervised kind: a fast SOP arm from the fast trunk's checkpoint (its losses and last head scores)."""
    from .sop_supervised import FAST_SUPERVISION, train_arm
    from .trunk import FAST_TRUNK

    arm = train_arm(checkpoint, "sop", 0, FAST_TRUNK, FAST_SUPERVISION)
    return [round(loss, 6) for loss in arm["losses"]] + [arm["points"][-1][t]["accuracy"] for t in ("sop", "nsp")]


def language_values() -> list[float]:
    """The language kind: the fast SOP row on the built language (its losses, probe and head scores)."""
    from .sop_language import FAST_LANGUAGE, FAST_PAIR_COUNTS, FAST_RECIPE, train_and_score

    run = train_and_score(FAST_LANGUAGE, FAST_RECIPE, FAST_PAIR_COUNTS, "sop", 0)
    return [round(loss, 6) for loss in run["losses"]] + [run[k]["accuracy"] for k in ("sop", "nsp", "sop_head")]


def write_guard(values: dict[str, dict] | None = None) -> Path:
    """Record `values` (default: `guard_values()`, measured now) in GUARD_FILE, the values the test checks."""
    atomic_write_text(GUARD_FILE, json.dumps(guard_values() if values is None else values, indent=1) + "\n")
    return GUARD_FILE


def within_tolerance(recorded: float, measured: float) -> bool:
    """Whether `measured` passes the guard's test against `recorded` (pytest.approx with rel=TOLERANCE)."""
    return abs(measured - recorded) <= max(TOLERANCE * abs(recorded), 1e-12)


@dataclass
class GuardChanges:
    """What measured values change against the recorded guard, kind by kind."""

    lines: list[str] = field(default_factory=list)  # one per changed value, version or kind, for the reader
    moved: list[str] = field(default_factory=list)  # kinds recorded anew: new, re-versioned, or beyond tolerance
    unbumped: list[str] = field(default_factory=list)  # of `moved`: beyond tolerance at the recorded version
    rounding: list[str] = field(default_factory=list)  # kinds that differ only within tolerance
    dropped: list[str] = field(default_factory=list)  # recorded kinds no longer measured

    def guard(self, recorded: dict, measured: dict, force: bool = False) -> dict:
        """The guard to write: measured values for the kinds that moved (with `force`: for every kind), the
        recorded ones for the others; never the values of an unbumped kind unless `force`."""
        kept = set(self.rounding) | set(self.unbumped)
        return {kind: measured[kind] if force or kind not in kept else recorded[kind] for kind in measured}


def guard_changes(recorded: dict, measured: dict) -> GuardChanges:
    """Compare `measured` guard values with `recorded` ones (both as `guard_values` gives them)."""
    changes = GuardChanges()
    for kind in sorted(set(recorded) - set(measured)):
        changes.dropped.append(kind)
        changes.lines.append(f"{kind}: recorded but no longer measured; dropped")
    for kind, now in measured.items():
        before = recorded.get(kind)
        if not isinstance(before, dict) or not isinstance(before.get("values"), list):
            changes.moved.append(kind)
            changes.lines.append(f"{kind}: not recorded yet; {len(now['values'])} values recorded")
            continue
        old, new = before["values"], now["values"]
        if before.get("version") != now["version"]:
            changes.lines.append(f"{kind}: version {before.get('version')} -> {now['version']}")
        if len(old) != len(new):
            changes.lines.append(f"{kind}: {len(old)} values -> {len(new)}")
        beyond = within = 0
        for i, (a, b) in enumerate(zip(old, new)):
            if a == b:
                continue
            close = within_tolerance(a, b)
            beyond, within = beyond + (not close), within + close
            relative = abs(b - a) / abs(a) if a else float("inf")
            changes.lines.append(f"{kind}[{i}]: {a!r} -> {b!r} ({b - a:+.3g}, relative {relative:.1e}, "
                                 f"{'within' if close else 'beyond'} the tolerance of {TOLERANCE:g})")
        if before.get("version") != now["version"] or len(old) != len(new) or beyond:
            changes.moved.append(kind)
            if before.get("version") == now["version"] and beyond:
                changes.unbumped.append(kind)
        elif within:
            changes.rounding.append(kind)
    return changes
