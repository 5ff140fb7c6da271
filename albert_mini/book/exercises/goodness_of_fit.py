"""Pearson's chi-square goodness-of-fit test, for the checks that judge a learner's random draws by their counts.

Plain math (no scipy, which the package does not depend on): the chi-square survival function has a closed form
for a whole number of degrees of freedom, the only case a count over categories needs.
"""

from __future__ import annotations

import functools
import math

import numpy as np


def chi_square_sf(x: float, dof: int) -> float:
    """P(X > x) for X chi-square with `dof` (a positive whole number) degrees of freedom."""
    if dof < 1 or int(dof) != dof:
        raise ValueError(f"dof must be a positive whole number, not {dof!r}")
    if x <= 0:
        return 1.0
    half = x / 2
    if dof % 2 == 0:  # e^-h * sum_{j < dof/2} h^j / j!
        term = total = math.exp(-half)
        for j in range(1, dof // 2):
            term *= half / j
            total += term
        return min(total, 1.0)
    # odd: erfc(sqrt(h)) + e^-h * sum_{j=1}^{(dof-1)/2} h^(j-1/2) / Gamma(j+1/2)
    total = math.erfc(math.sqrt(half))
    term = math.exp(-half) * math.sqrt(half) / math.gamma(1.5)
    for j in range(1, (dof - 1) // 2 + 1):
        total += term
        term *= half / (j + 0.5)  # Gamma(j + 3/2) = (j + 1/2) Gamma(j + 1/2)
    return min(total, 1.0)


@functools.cache
def critical_value(alpha: float, dof: int) -> float:
    """The x with chi_square_sf(x, dof) = alpha (by bisection: the survival function falls as x grows)."""
    low, high = 0.0, 1.0
    while chi_square_sf(high, dof) > alpha:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if chi_square_sf(middle, dof) > alpha else (low, middle)
    return high


def chi_square(counts: np.ndarray, law: np.ndarray) -> np.ndarray:
    """Pearson's statistic sum((count - N p)^2 / (N p)) over the last axis (so many samples at once)."""
    counts = np.asarray(counts, dtype=np.float64)
    expected = counts.sum(axis=-1, keepdims=True) * np.asarray(law, dtype=np.float64)
    return ((counts - expected) ** 2 / expected).sum(axis=-1)


def fits(counts, law, alpha: float) -> bool:
    """Whether the test at level `alpha` keeps the hypothesis that `counts` were drawn from `law` (one sample).

    A category the law gives no probability must have no count; with one category the law is certain.
    """
    counts, law = np.asarray(counts, dtype=np.float64), np.asarray(law, dtype=np.float64)
    if counts.shape != law.shape or counts.sum() == 0:
        return False
    possible = law > 0
    if np.any(counts[~possible] > 0):
        return False
    counts, law = counts[possible], law[possible]
    if len(law) == 1:
        return True
    return bool(chi_square(counts, law) <= critical_value(alpha, len(law) - 1))
