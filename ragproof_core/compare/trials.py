"""The statistics of repeated trials (CONTRACT section 27; docs/metrics.md, "Repeated
trials"): how much of a metric's spread is the cases' own and how much is noise.

Everything is computed from one metric's scored trials grouped by case
(``CaseTrials``): a case with no scored trial is not a case here (it has no mean),
so it enters no statistic. With C such cases, case i having n_i scored trials of
mean m_i and sample variance s_i^2:

- the run's mean is the mean of the per-case means, each case counting once
  whatever its trials: mean = sum(m_i) / C;
- ``within_case_sd`` = sqrt(mean of s_i^2 over the cases with n_i >= 2);
- ``between_case_sd`` = the sample standard deviation (n - 1) of the m_i;
- ``icc``: ICC(1) = (MSB - MSW) / (MSB + (n0 - 1) MSW) from the one-way ANOVA of the
  scores by case, with T = sum(n_i) scored trials, grand mean g = sum(n_i m_i) / T,
  MSB = sum(n_i (m_i - g)^2) / (C - 1), MSW = sum((n_i - 1) s_i^2) / (T - C) and the
  unbalanced n0 = (T - sum(n_i^2) / T) / (C - 1);
- for a metric whose scored values are all 0 or 1, over the cases with n_i >= k
  (c_i passes): pass@k = mean of 1 - C(n_i - c_i, k) / C(n_i, k), the chance that
  at least one of k trials drawn without replacement passes, and pass^k = mean of
  C(c_i, k) / C(n_i, k), the chance that all k do (the unbiased estimators);
- ``flaky_cases``: the cases whose scored trials lie ``FLAKY_SPREAD`` or more apart;
- the mean's interval: a percentile cluster bootstrap that resamples the C cases,
  each with all its trials. The mean of a resample is the mean of its cases' means,
  so it is the bootstrap of the per-case means (``stats.paired_bootstrap_ci`` of
  them: ``RESAMPLES`` resamples, seed ``SEED``, case indices drawn as it draws them).

A statistic that cannot be computed is None (never 0): ``within_case_sd`` without a
case of two scored trials, ``between_case_sd`` with fewer than two cases, ``icc``
when either is missing or the scores do not vary at all, pass@k and pass^k for a
metric not 0/1 or without a case of k scored trials.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from ragproof_core.compare.stats import bootstrap_mean_cis, paired_bootstrap_ci
from ragproof_core.metrics.aggregate import P50, P95, MetricSummary, nearest_rank

# A case is flaky when its scored trials lie at least this far apart (max - min); the
# ``repeats`` view uses the same (``store.views.FLAKY_SPREAD``).
FLAKY_SPREAD = 0.5
RESAMPLES = 2_000
SEED = 0
CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class CaseTrials:
    """One metric's scored trials, grouped by case: one entry per case with at least one
    scored trial, in case-id order."""

    case_ids: pa.Array
    n: np.ndarray  # int64: the case's scored trials
    mean: np.ndarray  # float64: their mean
    m2: np.ndarray  # float64: the sum of their squared deviations from the case's mean
    low: np.ndarray  # float64: the lowest score
    high: np.ndarray  # float64: the highest score
    passes: np.ndarray  # int64: trials scoring exactly 1.0
    binary: bool  # every scored value is 0 or 1

    @property
    def cases(self) -> int:
        return int(self.n.size)

    @property
    def trials(self) -> int:
        """Scored trials over every case (T)."""
        return int(self.n.sum())

    @classmethod
    def of(cls, case_ids: Sequence[str] | pa.Array, values: Sequence[float]) -> CaseTrials:
        """From scored trials as rows: each row's case id and score, in any order."""
        ids = pa.array(case_ids, pa.string()) if not isinstance(case_ids, pa.Array) else case_ids
        scores = np.asarray(values, dtype=np.float64)
        if len(ids) != scores.size:
            raise ValueError(f"{len(ids)} case ids for {scores.size} scores")
        if scores.size == 0:
            return cls.empty()
        # Case ids in code point order (as stored_pairs orders them), rows grouped by case.
        order = np.lexsort((scores, np.asarray(ids.to_pylist(), dtype=object).astype(str)))
        ids, scores = ids.take(pa.array(order)), scores[order]
        keys = np.asarray(ids.to_pylist(), dtype=object)
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        n = np.diff(np.r_[starts, scores.size])
        total = np.add.reduceat(scores, starts)
        mean = total / n
        deviations = scores - np.repeat(mean, n)
        return cls(
            case_ids=ids.take(pa.array(starts)),
            n=n.astype(np.int64),
            mean=mean,
            m2=np.add.reduceat(deviations * deviations, starts),
            low=scores[starts],
            high=scores[np.r_[starts[1:], scores.size] - 1],
            passes=np.add.reduceat((scores == 1.0).astype(np.int64), starts),
            binary=bool(np.all((scores == 0.0) | (scores == 1.0))),
        )

    @classmethod
    def empty(cls) -> CaseTrials:
        floats, ints = np.empty(0, np.float64), np.empty(0, np.int64)
        return cls(pa.array([], pa.string()), ints, floats, floats, floats, floats, ints, False)


def case_weighted_mean(trials: CaseTrials) -> float | None:
    """The mean of the per-case means; None without a scored case."""
    if trials.cases == 0:
        return None
    return math.fsum(trials.mean.tolist()) / trials.cases


def within_case_sd(trials: CaseTrials) -> float | None:
    """sqrt of the mean, over cases with 2+ scored trials, of each case's sample variance."""
    several = trials.n >= 2
    if not several.any():
        return None
    variances = trials.m2[several] / (trials.n[several] - 1)
    return math.sqrt(max(0.0, math.fsum(variances.tolist()) / int(several.sum())))


def between_case_sd(trials: CaseTrials) -> float | None:
    """The sample standard deviation of the per-case means; None with fewer than 2 cases."""
    if trials.cases < 2:
        return None
    return float(np.std(trials.mean, ddof=1))


def icc1(trials: CaseTrials) -> float | None:
    """ICC(1) of the one-way ANOVA of scores by case, with the unbalanced n0 (module
    docstring); None with fewer than 2 cases, no case of 2+ trials, or no variation."""
    cases, total = trials.cases, trials.trials
    if cases < 2 or total <= cases:
        return None
    grand = float(np.dot(trials.n, trials.mean)) / total
    msb = float(np.dot(trials.n, (trials.mean - grand) ** 2)) / (cases - 1)
    msw = float(trials.m2.sum()) / (total - cases)
    n0 = (total - float(np.dot(trials.n, trials.n)) / total) / (cases - 1)
    denominator = msb + (n0 - 1.0) * msw
    if denominator <= 0.0:
        return None
    return (msb - msw) / denominator


def _at_least(trials: CaseTrials, k: int) -> np.ndarray:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return trials.n >= k


def _chances(trials: CaseTrials, k: int, chance) -> float | None:
    """The mean over cases with ``k``+ scored trials of ``chance(n, c, k)``, computed once
    per distinct (n, c); None for a metric not 0/1 or without such a case."""
    chosen = _at_least(trials, k)
    if not trials.binary or not chosen.any():
        return None
    pairs, counts = np.unique(
        np.stack([trials.n[chosen], trials.passes[chosen]], axis=1), axis=0, return_counts=True
    )
    total = math.fsum(
        chance(int(n), int(c), k) * int(times)
        for (n, c), times in zip(pairs.tolist(), counts.tolist(), strict=True)
    )
    return total / int(chosen.sum())


def _pass_at(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _pass_all(n: int, c: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(trials: CaseTrials, k: int) -> float | None:
    """Mean over cases with k+ scored trials of 1 - C(n - c, k) / C(n, k)."""
    return _chances(trials, k, _pass_at)


def pass_hat_k(trials: CaseTrials, k: int) -> float | None:
    """Mean over cases with k+ scored trials of C(c, k) / C(n, k) (pass^k)."""
    return _chances(trials, k, _pass_all)


def flaky(trials: CaseTrials) -> np.ndarray:
    """Whether each case is flaky: its scored trials ``FLAKY_SPREAD`` or more apart."""
    return (trials.high - trials.low) >= FLAKY_SPREAD


def cluster_bootstrap_ci(
    trials: CaseTrials,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> tuple[float, float] | None:
    """The percentile interval of the case-weighted mean over ``resamples`` resamples of
    the cases, each with all its trials (module docstring); None without a scored case."""
    return paired_bootstrap_ci(trials.mean, resamples=resamples, confidence=confidence, seed=seed)


def cluster_bootstrap_cis(trials: Sequence[CaseTrials]) -> list[tuple[float, float] | None]:
    """``cluster_bootstrap_ci`` of each metric's trials, bit for bit: metrics with as
    many cases share the drawn resample indices (``stats.bootstrap_mean_cis``)."""
    return bootstrap_mean_cis(
        [t.mean for t in trials], resamples=RESAMPLES, confidence=CONFIDENCE, seed=SEED
    )


@dataclass(frozen=True, slots=True)
class TrialStatistics:
    """What ``run --json`` adds to a metric of a run with repeats (CONTRACT section 27)."""

    cases: int
    trials: int
    mean: float | None
    # Nearest-rank percentiles of the per-case means.
    p50: float | None
    p95: float | None
    within_case_sd: float | None
    between_case_sd: float | None
    icc: float | None
    k: int | None  # None for a metric whose scores are not all 0 or 1
    pass_at_k: float | None
    pass_hat_k: float | None
    flaky_cases: int
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "trials": self.trials,
            "mean": self.mean,
            "p50": self.p50,
            "p95": self.p95,
            "within_case_sd": self.within_case_sd,
            "between_case_sd": self.between_case_sd,
            "icc": self.icc,
            "k": self.k,
            "pass_at_k": self.pass_at_k,
            "pass_hat_k": self.pass_hat_k,
            "flaky_cases": self.flaky_cases,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


def trial_statistics(trials: CaseTrials, k: int) -> TrialStatistics:
    """Every statistic of one metric's trials, pass@k and pass^k at ``k``."""
    return _statistics(trials, k, cluster_bootstrap_ci(trials))


def trial_statistics_by_metric(
    by_metric: Mapping[str, CaseTrials], k: int
) -> dict[str, TrialStatistics]:
    """``trial_statistics`` of each metric's trials, the intervals drawn together
    (``cluster_bootstrap_cis``)."""
    intervals = cluster_bootstrap_cis(list(by_metric.values()))
    return {
        metric: _statistics(trials, k, interval)
        for (metric, trials), interval in zip(by_metric.items(), intervals, strict=True)
    }


def _statistics(
    trials: CaseTrials, k: int, interval: tuple[float, float] | None
) -> TrialStatistics:
    means = sorted(trials.mean.tolist())
    return TrialStatistics(
        cases=trials.cases,
        trials=trials.trials,
        mean=case_weighted_mean(trials),
        p50=nearest_rank(means, P50) if means else None,
        p95=nearest_rank(means, P95) if means else None,
        within_case_sd=within_case_sd(trials),
        between_case_sd=between_case_sd(trials),
        icc=icc1(trials),
        k=k if trials.binary else None,
        pass_at_k=pass_at_k(trials, k),
        pass_hat_k=pass_hat_k(trials, k),
        flaky_cases=int(flaky(trials).sum()),
        ci_low=None if interval is None else interval[0],
        ci_high=None if interval is None else interval[1],
    )


def with_trial_statistics(
    summaries: Sequence[MetricSummary], statistics: dict[str, TrialStatistics]
) -> list[MetricSummary]:
    """A run with repeats' summaries: each metric's mean, p50 and p95 over its per-case
    means, and its trials' statistics (the counts stay counts of trials). A metric
    nothing scored keeps its empty statistics, with 0 cases and 0 flaky."""
    empty = trial_statistics(CaseTrials.empty(), 1)
    out = []
    for summary in summaries:
        found = statistics.get(summary.metric, empty)
        out.append(
            replace(
                summary,
                mean=found.mean,
                p50=found.p50,
                p95=found.p95,
                cases=found.cases,
                within_case_sd=found.within_case_sd,
                between_case_sd=found.between_case_sd,
                icc=found.icc,
                pass_k=found.k,
                pass_at_k=found.pass_at_k,
                pass_hat_k=found.pass_hat_k,
                flaky_cases=found.flaky_cases,
                ci_low=found.ci_low,
                ci_high=found.ci_high,
            )
        )
    return out
