"""How sure a measured difference is: intervals for an accuracy and a seed mean, paired tests for two models.

Two models scored on the same examples are compared example by example (McNemar's exact test, or a paired
bootstrap of the accuracy difference), never by two separate intervals: the examples both get right or both get
wrong carry no information about which model is better, and an unpaired rule counts their noise twice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["compare_paired", "mcnemar_exact", "paired_bootstrap", "seed_summary", "wilson_interval"]

# Two-sided 95% critical values of Student's t for 1..30 degrees of freedom (standard tables).
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
Z975 = 1.959964  # the normal quantile of 0.975


def t_critical(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (table to 30, then a series in 1/df)."""
    if df < 1:
        raise ValueError(f"a t interval needs at least 2 values (1 degree of freedom), got df={df}")
    if df <= len(T975):
        return T975[df - 1]
    z = Z975  # Cornish-Fisher expansion: within 1e-3 of the exact quantile from df = 31 on
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def seed_summary(values: Sequence[float]) -> dict:
    """Mean, sample standard deviation (n - 1) and 95% t interval of a measurement repeated over seeds."""
    x = [float(v) for v in values if v is not None]
    if not x:
        raise ValueError("seed_summary got no values: run at least one seed")
    mean = sum(x) / len(x)
    if len(x) == 1:  # one seed: no spread can be estimated, and none is invented
        return {"mean": mean, "std": None, "n": 1, "ci95": None, "values": x}
    std = math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1))
    half = t_critical(len(x) - 1) * std / math.sqrt(len(x))
    return {"mean": mean, "std": std, "n": len(x), "ci95": [mean - half, mean + half], "values": x}


def paired_by_seed(records_a: dict, records_b: dict, key: str) -> dict:
    """A measure (`key`, e.g. held-out MLM accuracy) of A minus B, paired by seed: records_a and records_b map each
    seed to a run's record, trained on the same data order, masks and held-out batches. The seeds are the unit,
    so the interval is a t interval over the per-seed differences."""
    return seed_summary([records_a[s][key] - records_b[s][key] for s in sorted(records_a)])


def wilson_interval(correct: int, total: int, z: float = Z975) -> tuple[float, float]:
    """Wilson's score interval for an accuracy of `correct` out of `total` (95% by default)."""
    if total < 1 or not 0 <= correct <= total:
        raise ValueError(f"need 0 <= correct <= total and total >= 1, got {correct} of {total}")
    p = correct / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z / (1 + z * z / total) * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return max(0.0, centre - half), min(1.0, centre + half)


def binomial_tail(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), summed exactly in integers."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts: examples only model A got right, only B did.

    Under "both models are equally good" each discordant example is a fair coin, so the p-value is twice the
    smaller binomial tail (capped at 1); with no discordant example there is no evidence either way (p = 1).
    """
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got {only_a} and {only_b}")
    n = only_a + only_b
    return 1.0 if n == 0 else min(1.0, 2 * binomial_tail(min(only_a, only_b), n))


def as_correct(correct) -> np.ndarray:
    """Correctness as a 0/1 array (seeds, examples): accepts one row, rows, or strings of '0'/'1'."""
    if isinstance(correct, str):
        rows = [correct]
    elif all(isinstance(r, str) for r in correct):
        rows = list(correct)
    else:
        rows = [correct] if np.ndim(correct) == 1 else list(correct)
    return np.array([[c == "1" for c in r] if isinstance(r, str) else r for r in rows], dtype=float)


def discordant(correct_a, correct_b) -> tuple[int, int]:
    """(only A right, only B right), summed over seeds: rows of A and B pair up seed by seed."""
    a, b = as_correct(correct_a), as_correct(correct_b)
    if a.shape != b.shape:
        raise ValueError(f"paired scores need the same examples and seeds; got shapes {a.shape} and {b.shape}")
    return int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())


def paired_bootstrap(correct_a, correct_b, resamples: int = 2000, seed: int = 0) -> dict:
    """Accuracy of A minus B, with a 95% percentile interval from resampling the shared examples.

    Inputs are 0/1 per example, one row per seed (rows pair up seed by seed); the difference is averaged over
    seeds, and every resample draws one set of example indices used for all seeds, keeping the pairing.
    """
    a, b = as_correct(correct_a), as_correct(correct_b)
    if a.shape != b.shape:
        raise ValueError(f"paired scores need the same examples and seeds; got shapes {a.shape} and {b.shape}")
    diff = (a - b).mean(0)  # (examples,): per-example difference averaged over seeds
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[draws].mean(1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"difference": float(diff.mean()), "ci95": [float(lo), float(hi)], "resamples": resamples}


def compare_paired(correct_a, correct_b, seed: int = 0) -> dict:
    """Both paired tests for two models on the same examples: McNemar (pooled over seeds) and the bootstrap."""
    only_a, only_b = discordant(correct_a, correct_b)
    return {"only_a": only_a, "only_b": only_b, "mcnemar_p": mcnemar_exact(only_a, only_b),
            "bootstrap": paired_bootstrap(correct_a, correct_b, seed=seed)}
