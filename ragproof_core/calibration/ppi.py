"""Bias-corrected means from a few human labels: prediction-powered inference (PPI).

A judge metric's mean over N cases is cheap but carries the judge's bias. A
human labels n of those cases. PPI (Angelopoulos et al., 2023) keeps the
labelled set L (n cases: judge score f, human score y) and the unlabelled set
U (the other N - n: judge scores f) apart:

    ppi_mean = mean_U(f) + mean_L(y - f)
    ppi_ci   = ppi_mean ± z * sqrt(var_U(f) / (N - n) + var_L(y - f) / n)

The judge's mean on U is corrected by the judge's average error measured
where a human also looked. The interval is valid whatever the judge's bias;
it is narrower than the human-only one (``human_mean ± z * sd_L(y)/sqrt(n)``)
when the judge tracks the humans, i.e. var(y - f) is well below var(y).

Every variance and sd is the sample one (ddof 1) and z = 1.96 (CONTRACT
section 12). With n < 2 or N - n < 2 the figures that need them are None.
Every interval is reported within [0, 1], and so is the PPI mean (CONTRACT
section 25; docs/judge.md): scores and labels lie in [0, 1], so their mean does,
and clipping an interval to where the mean must be keeps its coverage.

The functions take numpy arrays whose *last* axis holds the cases, so a
simulation can evaluate thousands of repetitions at once; with 1-D inputs
they return plain floats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Z = 1.96

Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """One metric's three estimates of the mean human score."""

    n_judged: int  # N: judge-scored cases
    n_labelled: int  # n: of those, the ones a human scored
    judge_mean: float | None
    judge_ci: Interval | None
    human_mean: float | None
    human_ci: Interval | None
    ppi_mean: float | None
    ppi_ci: Interval | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_judged": self.n_judged,
            "n_labelled": self.n_labelled,
            "judge_mean": self.judge_mean,
            "judge_ci": None if self.judge_ci is None else list(self.judge_ci),
            "human_mean": self.human_mean,
            "ppi_mean": self.ppi_mean,
            "ppi_ci": None if self.ppi_ci is None else list(self.ppi_ci),
            "human_ci": None if self.human_ci is None else list(self.human_ci),
        }


def mean_and_half_width(values: np.ndarray, z: float = Z) -> tuple[Any, Any]:
    """(mean, z * sd / sqrt(n)) along the last axis; needs at least 2 values."""
    n = values.shape[-1]
    return values.mean(axis=-1), z * values.std(axis=-1, ddof=1) / np.sqrt(n)


def ppi_mean_and_half_width(
    f_labelled: np.ndarray, y_labelled: np.ndarray, f_unlabelled: np.ndarray, z: float = Z
) -> tuple[Any, Any]:
    """(ppi_mean, half width of ppi_ci) along the last axis; needs n >= 2 and N - n >= 2."""
    n = f_labelled.shape[-1]
    rest = f_unlabelled.shape[-1]
    error = y_labelled - f_labelled
    mean = f_unlabelled.mean(axis=-1) + error.mean(axis=-1)
    variance = f_unlabelled.var(axis=-1, ddof=1) / rest + error.var(axis=-1, ddof=1) / n
    return mean, z * np.sqrt(variance)


def within_unit(value: float) -> float:
    """``value`` clipped to [0, 1], where every judge score and human label lies."""
    return float(min(1.0, max(0.0, value)))


def _interval(mean: float, half: float) -> Interval:
    """``mean ± half`` within [0, 1] (CONTRACT section 25): the mean of scores in [0, 1]
    lies there, so an interval that covers it still does after the clip, and none
    reads as "between -0.55 and 1.98" after three labels."""
    return (within_unit(mean - half), within_unit(mean + half))


def estimate(
    f_labelled: np.ndarray | list[float],
    y_labelled: np.ndarray | list[float],
    f_unlabelled: np.ndarray | list[float],
    z: float = Z,
) -> PPIEstimate:
    """Judge-only, human-only and PPI estimates for one metric."""
    f_l = np.asarray(f_labelled, dtype=np.float64)
    y_l = np.asarray(y_labelled, dtype=np.float64)
    f_u = np.asarray(f_unlabelled, dtype=np.float64)
    if f_l.shape != y_l.shape:
        raise ValueError(f"{f_l.size} judge scores but {y_l.size} human scores for L")
    n, rest = f_l.size, f_u.size
    f_all = np.concatenate([f_l, f_u])
    judge_mean = judge_ci = human_mean = human_ci = ppi_mean = ppi_ci = None
    if f_all.size >= 1:
        judge_mean = float(f_all.mean())
    if f_all.size >= 2:
        judge_ci = _interval(*mean_and_half_width(f_all, z))
    if n >= 2:
        mean, half = mean_and_half_width(y_l, z)
        human_mean, human_ci = float(mean), _interval(mean, half)
        if rest >= 2:
            mean, half = ppi_mean_and_half_width(f_l, y_l, f_u, z)
            # The correction can carry the estimate past a bound (a judge at 1.0 corrected
            # up by labels above it): no mean score lies there, the bound is nearer.
            ppi_mean, ppi_ci = within_unit(mean), _interval(mean, half)
    return PPIEstimate(
        n_judged=n + rest,
        n_labelled=n,
        judge_mean=judge_mean,
        judge_ci=judge_ci,
        human_mean=human_mean,
        human_ci=human_ci,
        ppi_mean=ppi_mean,
        ppi_ci=ppi_ci,
    )


def labels_for_half_width(
    half_width: float, var_error: float, var_judge: float, n_judged: int, z: float = Z
) -> int | None:
    """The fewest labels n (2 <= n <= N - 2) whose PPI interval is at most ``half_width``
    either side: ``z * sqrt(var_judge / (N - n) + var_error / n) <= half_width``, with
    ``var_error`` the variance of human minus judge and ``var_judge`` of the judge's
    scores. None when no n reaches it (the judge's own spread over N cases is already
    wider). Human labels alone need ``ceil((z * sd(y) / half_width)^2)``."""
    if half_width <= 0 or var_error < 0 or var_judge < 0:
        raise ValueError("half_width must be positive and variances non-negative")
    target = (half_width / z) ** 2
    for n in range(2, n_judged - 1):
        if var_judge / (n_judged - n) + var_error / n <= target:
            return n
    return None
