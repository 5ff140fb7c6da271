"""Results at a glance: paired differences over seeds as one compact table and one verdict sentence.

A chapter builds a list of `Difference`s (A minus B, one value per seed) from a committed result, shows
`seed_table(...)` and prints `verdict(...)`. Seeds are the unit: each interval is a 95% t interval over the
per-seed differences, and a difference counts as resolved only when its interval excludes zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .stats import seed_summary

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["accuracy_table", "paired_verdict", "seed_table", "verdict"]


@dataclass(frozen=True)
class Difference:
    """A minus B, seed by seed; `better` says which sign favours A ("higher" or "lower")."""

    a: str
    b: str
    values: Sequence[float]
    measure: str = "MLM loss"
    better: str = "higher"
    scale: float = 1.0  # 100 prints a fraction as points
    digits: int = 3
    note: str | None = None  # shown after the reading, e.g. why a seed was not tested
    label: str | None = None  # how the verdict names it (default "A vs B")

    def name(self) -> str:
        return self.label or f"{self.a} vs {self.b}"

    def summary(self) -> dict:
        """Mean, std and 95% t interval over the seeds (no interval for one seed)."""
        return seed_summary(list(self.values))

    def reading(self) -> str:
        """"A better", "B better", "no clear difference", or "one seed: no interval"."""
        interval = self.summary().get("ci95")
        if interval is None:
            return "one seed: no interval"
        low, high = interval
        if low > 0 or high < 0:
            a_better = (low > 0) == (self.better == "higher")
            return f"{self.a if a_better else self.b} better"
        return "no clear difference"

    def resolved(self) -> bool:
        """Whether the interval over seeds excludes zero."""
        return self.reading().endswith(" better")

    def number(self, value: float) -> str:
        return f"{self.scale * value:+.{self.digits}f}"


def interval_text(d: Difference) -> str:
    """"mean [low, high]" in the difference's units, or the mean alone for one seed."""
    s = d.summary()
    text = d.number(s["mean"])
    return text + (f" [{d.number(s['ci95'][0])}, {d.number(s['ci95'][1])}]" if s.get("ci95") else "")


def favouring(d: Difference) -> str:
    """How many seeds favour A: "3 of 3"."""
    good = sum((v > 0) if d.better == "higher" else (v < 0) for v in d.values)
    return f"{good} of {len(d.values)}"


def seed_table(differences: Sequence[Difference]) -> str:
    """One markdown table: each difference's per-seed values, mean with its 95% t interval, and reading."""
    rows = ["| A - B | measure | per seed | mean [95% interval] | seeds favouring A | reading |",
            "|---|---|---|---|---|---|"]
    for d in differences:
        per_seed = ", ".join(d.number(v) for v in d.values)
        rows.append(f"| {d.a} - {d.b} | {d.measure} ({d.better} is better) | {per_seed} | {interval_text(d)} | "
                    f"{favouring(d)} | {d.reading()}{'; ' + d.note if d.note else ''} |")
    return "\n".join(rows)


def verdict(differences: Sequence[Difference]) -> str:
    """One sentence computed from the intervals: which differences are resolved, and which include zero."""
    if not differences:
        return "Nothing to compare."
    seeds = {len(d.values) for d in differences}
    over = f"{seeds.pop()} seeds" if len(seeds) == 1 else "their seeds"
    resolved = [d for d in differences if d.resolved()]
    open_ = [d for d in differences if not d.resolved()]
    if len(differences) == 1:
        d = differences[0]
        if d.resolved():
            return (f"Over {over}, {d.reading().removesuffix(' better')} is better on {d.measure}: "
                    f"{d.a} - {d.b} = {interval_text(d)}, an interval that excludes zero.")
        return (f"Over {over}, {d.a} - {d.b} on {d.measure} is {interval_text(d)}: the interval includes zero, so "
                "these runs cannot tell the two apart.")
    said = "; ".join(f"{d.name()}: {d.reading()}" for d in resolved)
    unsaid = ", ".join(d.name() for d in open_)
    if not open_:
        return f"All {len(differences)} differences are resolved over {over} ({said})."
    if not resolved:
        return (f"None of the {len(differences)} differences is resolved over {over}: every interval includes "
                "zero.")
    verb = "includes" if len(open_) == 1 else "include"
    return (f"{len(resolved)} of {len(differences)} differences are resolved over {over} ({said}); the "
            f"interval{'' if len(open_) == 1 else 's'} of {unsaid} {verb} zero.")


def accuracy_table(scores: dict[str, dict]) -> str:
    """One markdown table of accuracies on held-out examples, each with its 95% interval (name -> accuracy,
    interval, total)."""
    rows = ["| answer | accuracy | 95% interval | examples |", "|---|---|---|---|"]
    for name, s in scores.items():
        low, high = s["interval"]
        rows.append(f"| {name} | {100 * s['accuracy']:.1f}% | [{100 * low:.1f}, {100 * high:.1f}] | {s['total']:,} |")
    return "\n".join(rows)


def paired_verdict(a: str, paired: dict[str, dict]) -> str:
    """One sentence on `a` against others on the same examples, from each paired bootstrap interval (points)."""
    parts = []
    for name, c in paired.items():
        low, high = c["bootstrap"]["ci95"]
        where = "above" if low > 0 else "below" if high < 0 else "level with"
        parts.append(f"{where} {name} ({100 * c['bootstrap']['difference']:+.1f} points [{100 * low:+.1f}, "
                     f"{100 * high:+.1f}], McNemar p = {c['mcnemar_p']:.2g})")
    return f"On the same examples, {a} is " + " and ".join(parts) + "."
