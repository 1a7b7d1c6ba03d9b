"""Paired statistics for comparing two runs on the same cases.

Both functions take the per-case deltas ``value_b - value_a`` of one metric,
over the cases scored in both runs, and are deterministic for a given seed:
the same inputs always give bit-identical results, so a comparison printed
today can be reproduced next year.

Everything is vectorised and processed in blocks of bounded size, so 10,000
cases x 10,000 resamples runs in about a second without allocating the full
resample matrix at once. The block size depends only on ``n``, never on the
machine, which keeps the random stream (and so the result) reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Elements per block of the (resamples x n) work matrix: ~4M keeps the largest
# temporary near 32 MB of float64 whatever n is.
_BLOCK_ELEMENTS = 4_000_000


def _as_deltas(deltas: Sequence[float]) -> np.ndarray:
    arr = np.asarray(deltas, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"deltas must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("deltas must be finite numbers")
    return arr


def _rows_per_block(n: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(n, 1))


def paired_bootstrap_ci(
    deltas: Sequence[float],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean paired delta.

    Resamples the deltas (cases) with replacement ``resamples`` times, takes
    each resample's mean, and returns the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles of those means (numpy's default linear
    interpolation). Resampling the *deltas* rather than each run separately is
    what makes it paired: a case stays matched with itself.

    Returns None when there are no deltas (no result, not a zero interval).
    All-zero deltas give exactly ``(0.0, 0.0)``.
    """
    return bootstrap_mean_cis([deltas], resamples=resamples, confidence=confidence, seed=seed)[0]


def bootstrap_mean_cis(
    columns: Sequence[Sequence[float]],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float] | None]:
    """``paired_bootstrap_ci`` of each column, bit for bit, for less work: columns of one
    length draw the same resample indices from the same seed, so each block of indices
    is drawn once and serves them all (the draws cost as much as the means)."""
    arrays = [_as_deltas(column) for column in columns]
    intervals: list[tuple[float, float] | None] = [None] * len(arrays)
    if not any(arr.size for arr in arrays):
        return intervals
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    by_length: dict[int, list[int]] = {}
    for i, arr in enumerate(arrays):
        if arr.size and not np.any(arr):
            intervals[i] = (0.0, 0.0)
        elif arr.size:
            by_length.setdefault(arr.size, []).append(i)
    tail = (1.0 - confidence) / 2.0
    for n, members in by_length.items():
        rng = np.random.default_rng(seed)
        means = np.empty((len(members), resamples), dtype=np.float64)
        step = _rows_per_block(n)
        for start in range(0, resamples, step):
            rows = min(step, resamples - start)
            idx = rng.integers(0, n, size=(rows, n), dtype=np.int64 if n > 2**31 - 1 else np.int32)
            for row, i in enumerate(members):
                means[row, start : start + rows] = arrays[i][idx].mean(axis=1)
        for row, i in enumerate(members):
            low, high = np.quantile(means[row], [tail, 1.0 - tail])
            intervals[i] = (float(low), float(high))
    return intervals


def _exceeds(stat: np.ndarray, observed: float) -> np.ndarray:
    """``|stat| >= |observed|`` with a relative tolerance.

    The relabelled means are computed by a different formula than the observed
    mean, so the identity relabelling (and any relabelling that is a true tie)
    can differ from it in the last bits; without a tolerance such ties would
    randomly fall on either side.
    """
    obs = abs(observed)
    return np.abs(stat) >= obs - 1e-12 * max(obs, 1.0)


def paired_randomization_p(
    deltas: Sequence[float],
    *,
    permutations: int = 10_000,
    seed: int = 0,
) -> float | None:
    """Two-sided sign-flip randomization test of "the mean paired delta is 0".

    Under the null hypothesis the two runs are exchangeable on every case, so
    each delta is as likely to have the opposite sign. The test statistic is
    the mean delta; a relabelling flips the sign of each delta independently.

    - Exact (when ``2**n <= permutations``): every one of the ``2**n`` sign
      vectors is enumerated, the observed one (all +1) included, and
      ``p = count(|mean*| >= |mean_obs|) / 2**n``.
      Example: deltas [1, 1, 1, 1] -> only all-plus and all-minus reach
      ``|mean| >= 1``, so p = 2/16 = 0.125.
    - Monte Carlo (otherwise): ``permutations`` random sign vectors drawn
      with ``numpy.random.default_rng(seed)``, and
      ``p = (count(|mean*| >= |mean_obs|) + 1) / (permutations + 1)``.

    The two definitions agree: each counts the observed labelling exactly once
    (the exact enumeration contains it; the Monte Carlo ``+ 1`` adds it), which
    also keeps the Monte Carlo p strictly positive, as a p-value estimated from
    a finite sample must be.

    Returns None when there are no deltas; all-zero deltas give exactly 1.0.
    """
    arr = _as_deltas(deltas)
    n = arr.size
    if n == 0:
        return None
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, got {permutations}")
    if not np.any(arr):
        return 1.0
    observed = float(arr.mean())
    total = float(arr.sum())
    # With bits b in {0, 1} and signs s = 2b - 1: sum(s * d) = 2 * (b @ d) - sum(d),
    # so a block of relabelled sums is one matrix product.
    if n < 63 and 2**n <= permutations:
        codes = np.arange(2**n, dtype=np.int64)
        bits = ((codes[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(np.float64)
        stat = (2.0 * (bits @ arr) - total) / n
        return float(np.count_nonzero(_exceeds(stat, observed)) / 2**n)
    rng = np.random.default_rng(seed)
    count = 0
    step = _rows_per_block(n)
    packed_width = (n + 7) // 8
    for start in range(0, permutations, step):
        rows = min(step, permutations - start)
        # Eight fair coin flips per random byte: 8x fewer draws than one per case.
        packed = rng.integers(0, 256, size=(rows, packed_width), dtype=np.uint8)
        bits = np.unpackbits(packed, axis=1, count=n).astype(np.float64)
        stat = (2.0 * (bits @ arr) - total) / n
        count += int(np.count_nonzero(_exceeds(stat, observed)))
    return (count + 1) / (permutations + 1)


def nearest_rank(sorted_values: np.ndarray, fraction: float) -> np.ndarray:
    """The nearest-rank percentile (metrics.md's aggregation) along the last axis of
    already sorted values: the value at 1-based position ``max(1, ceil(fraction * n))``."""
    n = sorted_values.shape[-1]
    position = max(1, math.ceil(fraction * n))
    return sorted_values[..., position - 1]


def paired_bootstrap_quantile_diff_ci(
    values_a: Sequence[float],
    values_b: Sequence[float],
    *,
    fraction: float = 0.95,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``p(B) - p(A)``, ``p`` the nearest-rank
    ``fraction`` percentile (the p95 of a latency, say), over paired cases.

    Each resample draws case indices with replacement (``default_rng(seed).integers(0, n,
    (resamples, n))``, drawn in row blocks of the same stream) and takes both runs' values
    at the same indices, so a case stays matched with itself; the interval is the
    ``(1 -/+ confidence) / 2`` quantiles of the resampled differences (numpy's linear
    interpolation). None when there are no pairs.
    """
    a = _as_deltas(values_a)
    b = _as_deltas(values_b)
    if a.size != b.size:
        raise ValueError(f"paired values differ in length: {a.size} vs {b.size}")
    n = a.size
    if n == 0:
        return None
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    rng = np.random.default_rng(seed)
    diffs = np.empty(resamples, dtype=np.float64)
    step = _rows_per_block(n)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        idx = rng.integers(0, n, size=(rows, n), dtype=np.int64 if n > 2**31 - 1 else np.int32)
        diffs[start : start + rows] = nearest_rank(np.sort(b[idx], axis=1), fraction) - (
            nearest_rank(np.sort(a[idx], axis=1), fraction)
        )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(diffs, [tail, 1.0 - tail])
    return (float(low), float(high))
