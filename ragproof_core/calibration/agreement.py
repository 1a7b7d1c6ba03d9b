"""Agreement between judge and human bands: confusion matrix and quadratic-weighted kappa.

Scores are mapped to three ordered bands (0, 0.5, 1; ``band``). Exact and
within-band agreement count how often the bands match; Cohen's kappa with
quadratic weights also discounts the agreement two raters would reach by
chance from their band frequencies alone, and weighs a two-band miss (0 vs 1)
four times a one-band miss.

    w_ij = (i - j)^2 / (k - 1)^2          (k = 3 bands, i, j = 0, 1, 2)
    E_ij = row_i * col_j / total           (expected counts from the marginals)
    kappa = 1 - sum(w * O) / sum(w * E)

Kappa is undefined (None) with no pairs, or when ``sum(w * E)`` is 0 (both
raters used one and the same band throughout).
"""

from __future__ import annotations

from collections.abc import Sequence

BANDS: tuple[float, ...] = (0.0, 0.5, 1.0)


def band(score: float) -> float:
    """The nearest of the bands 0, 0.5 and 1.

    Ties go up: x < 0.25 -> 0, 0.25 <= x < 0.75 -> 0.5, x >= 0.75 -> 1. So 3 of
    4 supported claims (0.75) is "fully supported" and 1 of 4 (0.25) is "half".
    """
    if score < 0.25:
        return 0.0
    if score < 0.75:
        return 0.5
    return 1.0


def confusion_matrix(human: Sequence[float], judge: Sequence[float]) -> list[list[int]]:
    """Counts of (human band, judge band) pairs: rows human 0, 0.5, 1; columns judge."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human scores but {len(judge)} judge scores")
    matrix = [[0] * len(BANDS) for _ in BANDS]
    for h, j in zip(human, judge, strict=True):
        matrix[BANDS.index(band(h))][BANDS.index(band(j))] += 1
    return matrix


def quadratic_kappa(matrix: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa with quadratic weights over a square confusion matrix."""
    k = len(matrix)
    total = sum(sum(row) for row in matrix)
    if total == 0 or k < 2:
        return None
    rows = [sum(row) for row in matrix]
    cols = [sum(matrix[i][j] for i in range(k)) for j in range(k)]
    observed = expected = 0.0
    for i in range(k):
        for j in range(k):
            weight = (i - j) ** 2 / (k - 1) ** 2
            observed += weight * matrix[i][j]
            expected += weight * rows[i] * cols[j] / total
    if expected == 0:
        return None
    return 1.0 - observed / expected
