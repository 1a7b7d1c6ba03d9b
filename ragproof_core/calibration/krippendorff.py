"""Krippendorff's alpha for interval and ordinal data: agreement among coders (a jury's
models, or the people labelling a run) with missing values allowed.

Units are cases; each unit holds the values its coders gave (None: that coder
gave none). A unit with fewer than two values is not pairable and is left out,
as Krippendorff's definition does. From the pairable values, the coincidence
matrix counts every ordered pair of values within a unit, each unit weighted
by 1 / (m_u - 1):

    o[c][k] = sum over units u of (pairs (c, k) in u) / (m_u - 1)
    n_c     = sum over k of o[c][k]      (n = sum of n_c: the pairable values)
    D_o     = (1 / n) * sum over c, k of o[c][k] * d(c, k)
    D_e     = (1 / (n (n - 1))) * sum over c, k of n_c * n_k * d(c, k)
    alpha   = 1 - D_o / D_e

with the distance ``d`` of the level (Krippendorff, "Computing Krippendorff's
Alpha-Reliability", 2011):

- interval: ``(c - k)^2``;
- ordinal: ``(sum of n_g for g from c to k - (n_c + n_k) / 2)^2``, which reads
  only the values' order and how often each occurs.

alpha is 1 for perfect agreement, about 0 for agreement at chance, negative
below it; None (undefined) with fewer than two pairable values or when every
pairable value is the same (D_e = 0: nothing to disagree about).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

LEVELS: tuple[str, ...] = ("interval", "ordinal")


def coincidences(
    units: Iterable[Sequence[float | None]],
) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct pairable values, sorted; their coincidence matrix ``o``)."""
    pairable = [[v for v in unit if v is not None] for unit in units]
    pairable = [unit for unit in pairable if len(unit) >= 2]
    values = np.unique(np.array([v for unit in pairable for v in unit], dtype=np.float64))
    o = np.zeros((values.size, values.size))
    for unit in pairable:
        counts = np.bincount(np.searchsorted(values, unit), minlength=values.size)
        o += (np.outer(counts, counts) - np.diag(counts)) / (len(unit) - 1)
    return values, o


def distances(values: np.ndarray, marginals: np.ndarray, level: str) -> np.ndarray:
    """The matrix ``d(c, k)`` over the sorted distinct ``values`` for ``level``."""
    if level == "interval":
        return np.subtract.outer(values, values) ** 2
    if level == "ordinal":
        # cumulative[i] = n_0 + ... + n_i; the sum from c to k is a difference of two.
        cumulative = np.cumsum(marginals)
        index = np.arange(values.size)
        low, high = np.minimum.outer(index, index), np.maximum.outer(index, index)
        between = cumulative[high] - cumulative[low] + marginals[low]
        return (between - np.add.outer(marginals, marginals) / 2) ** 2
    raise ValueError(f"unknown level {level!r}; known: {', '.join(LEVELS)}")


def krippendorff_alpha(
    units: Iterable[Sequence[float | None]], level: str = "interval"
) -> float | None:
    """alpha over ``units`` (one list of coders' values per unit; None = missing)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; known: {', '.join(LEVELS)}")
    values, o = coincidences(units)
    marginals = o.sum(axis=1)
    n = marginals.sum()
    if n < 2:
        return None
    d = distances(values, marginals, level)
    observed = float((o * d).sum()) / n
    expected = float((np.outer(marginals, marginals) * d).sum()) / (n * (n - 1))
    if expected <= 1e-12:
        return None
    return 1.0 - observed / expected
