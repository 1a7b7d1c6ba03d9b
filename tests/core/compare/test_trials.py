"""The statistics of repeated trials (CONTRACT section 27) on hand-made trial matrices,
each against a reference computed here with numpy and scipy, apart from the code."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special, stats

from ragproof_core.compare.trials import (
    CaseTrials,
    between_case_sd,
    case_weighted_mean,
    cluster_bootstrap_ci,
    flaky,
    icc1,
    pass_at_k,
    pass_hat_k,
    trial_statistics,
    trial_statistics_by_metric,
    within_case_sd,
)

# case id -> its scored trials
BALANCED = {
    "a": [0.2, 0.4, 0.3],
    "b": [0.9, 0.8, 1.0],
    "c": [0.5, 0.5, 0.6],
    "d": [0.1, 0.7, 0.4],
}
UNBALANCED = {
    "a": [0.2, 0.4],
    "b": [0.9, 0.8, 1.0, 0.7, 0.95],
    "c": [0.5],
    "d": [0.1, 0.7, 0.4],
    "e": [0.3, 0.35, 0.3, 0.6],
}
BINARY = {
    "a": [1, 0, 1, 1, 0],
    "b": [0, 0, 0, 0],
    "c": [1, 1, 1, 1, 1],
    "d": [1, 0],
    "e": [0, 1, 1, 0, 1, 1],
}


def _trials(matrix: dict[str, list[float]]) -> CaseTrials:
    rows = [(case, value) for case, values in matrix.items() for value in values]
    # Rows in no particular order: the grouping is the code's.
    rows = rows[::-1]
    return CaseTrials.of([c for c, _ in rows], [float(v) for _, v in rows])


def _ref_means(matrix):
    return np.array([np.mean(v) for v in matrix.values()])


def _ref_icc(matrix) -> float:
    groups = [np.asarray(v, float) for v in matrix.values()]
    f, _ = stats.f_oneway(*groups)  # MSB / MSW
    n = np.array([g.size for g in groups], float)
    t, c = n.sum(), n.size
    n0 = (t - (n**2).sum() / t) / (c - 1)
    return (f - 1) / (f + n0 - 1)


@pytest.mark.parametrize("matrix", [BALANCED, UNBALANCED], ids=["balanced", "unbalanced"])
def test_mean_spreads_and_icc(matrix):
    trials = _trials(matrix)
    means = _ref_means(matrix)
    assert case_weighted_mean(trials) == pytest.approx(means.mean(), abs=1e-12)
    several = [np.var(v, ddof=1) for v in matrix.values() if len(v) >= 2]
    assert within_case_sd(trials) == pytest.approx(math.sqrt(np.mean(several)), abs=1e-12)
    assert between_case_sd(trials) == pytest.approx(np.std(means, ddof=1), abs=1e-12)
    assert icc1(trials) == pytest.approx(_ref_icc(matrix), abs=1e-12)


def test_balanced_icc_is_the_textbook_one():
    # Balanced: n0 is the trials per case, and ICC(1) = (MSB - MSW) / (MSB + (n - 1) MSW).
    x = np.array(list(BALANCED.values()))
    c, n = x.shape
    msb = n * np.sum((x.mean(axis=1) - x.mean()) ** 2) / (c - 1)
    msw = np.sum((x - x.mean(axis=1, keepdims=True)) ** 2) / (c * (n - 1))
    assert icc1(_trials(BALANCED)) == pytest.approx((msb - msw) / (msb + (n - 1) * msw))


def test_all_equal_scores():
    trials = _trials({"a": [0.5, 0.5], "b": [0.5, 0.5, 0.5]})
    assert case_weighted_mean(trials) == 0.5
    assert within_case_sd(trials) == 0.0
    assert between_case_sd(trials) == 0.0
    assert icc1(trials) is None  # no variation: undefined
    assert not flaky(trials).any()
    assert cluster_bootstrap_ci(trials) == pytest.approx((0.5, 0.5))


def test_one_trial_a_case():
    matrix = {"a": [0.2], "b": [0.9], "c": [0.4]}
    trials = _trials(matrix)
    assert case_weighted_mean(trials) == pytest.approx(0.5)
    assert within_case_sd(trials) is None
    assert between_case_sd(trials) == pytest.approx(np.std([0.2, 0.9, 0.4], ddof=1))
    assert icc1(trials) is None


def test_no_scored_trial_and_one_case():
    empty = CaseTrials.empty()
    assert case_weighted_mean(empty) is None
    assert within_case_sd(empty) is None
    assert between_case_sd(empty) is None
    assert icc1(empty) is None
    assert pass_at_k(empty, 1) is None
    assert cluster_bootstrap_ci(empty) is None
    one = _trials({"a": [0.1, 0.9]})
    assert between_case_sd(one) is None
    assert icc1(one) is None
    assert within_case_sd(one) == pytest.approx(np.std([0.1, 0.9], ddof=1))


def test_a_case_with_no_scored_trial_is_no_case():
    # Its trials are all unscored: it has no row among the scored trials, so the
    # statistics are those of the other cases alone.
    stats_ = trial_statistics(_trials(BALANCED), 2)
    assert stats_.cases == 4
    assert stats_.trials == 12


def _ref_pass(matrix, k, every: bool) -> float:
    values = []
    for v in matrix.values():
        n, c = len(v), int(sum(v))
        if n < k:
            continue
        if every:
            values.append(special.comb(c, k, exact=True) / special.comb(n, k, exact=True))
        else:
            values.append(1 - special.comb(n - c, k, exact=True) / special.comb(n, k, exact=True))
    return float(np.mean(values))


def _brute_force(matrix, k, every: bool) -> float:
    values = []
    for v in matrix.values():
        if len(v) < k:
            continue
        subsets = list(itertools.combinations(v, k))
        test = all if every else any
        values.append(sum(1 for s in subsets if test(x == 1 for x in s)) / len(subsets))
    return float(np.mean(values))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_pass_at_k_and_pass_hat_k(k):
    trials = _trials(BINARY)
    for every, estimator in ((False, pass_at_k), (True, pass_hat_k)):
        got = estimator(trials, k)
        assert got == pytest.approx(_ref_pass(BINARY, k, every), abs=1e-12)
        assert got == pytest.approx(_brute_force(BINARY, k, every), abs=1e-12)


def test_pass_k_undefined():
    assert pass_at_k(_trials(BINARY), 7) is None  # no case has 7 trials
    assert pass_hat_k(_trials(BALANCED), 1) is None  # not a 0/1 metric
    with pytest.raises(ValueError):
        pass_at_k(_trials(BINARY), 0)


def test_flaky_cases():
    trials = _trials(UNBALANCED)
    ids = trials.case_ids.to_pylist()
    spread = {case: max(v) - min(v) for case, v in UNBALANCED.items()}
    assert dict(zip(ids, flaky(trials).tolist(), strict=True)) == {
        case: s >= 0.5 for case, s in spread.items()
    }
    assert trial_statistics(trials, 1).flaky_cases == 1  # d: 0.1 to 0.7


def test_cluster_bootstrap_resamples_cases_with_their_trials():
    matrix = UNBALANCED
    groups = [np.asarray(v, float) for v in matrix.values()]
    rng = np.random.default_rng(0)
    draws = rng.integers(0, len(groups), size=(2000, len(groups)), dtype=np.int32)
    means = [np.mean([groups[i].mean() for i in draw]) for draw in draws]
    low, high = np.quantile(means, [0.025, 0.975])
    assert cluster_bootstrap_ci(_trials(matrix)) == pytest.approx((low, high), abs=1e-12)


def test_trial_statistics_object():
    found = trial_statistics(_trials(BINARY), 2).to_dict()
    assert found["k"] == 2
    assert found["cases"] == 5
    assert found["pass_at_k"] == pytest.approx(_ref_pass(BINARY, 2, False))
    assert found["ci_low"] <= found["mean"] <= found["ci_high"]
    assert trial_statistics(_trials(BALANCED), 2).k is None


def test_statistics_of_several_metrics_equal_each_metric_alone():
    # BALANCED and BINARY-like matrices of 4 cases share the drawn resample indices
    # (one seed), UNBALANCED has 5 cases: every figure equals its metric's alone.
    matrices = {"m.balanced": BALANCED, "m.unbalanced": UNBALANCED, "m.binary": BINARY}
    four = {case: [1.0 - v for v in trials] for case, trials in BALANCED.items()}
    matrices["m.mirror"] = four
    by_metric = {name: _trials(matrix) for name, matrix in matrices.items()}
    together = trial_statistics_by_metric(by_metric, 2)
    assert together == {name: trial_statistics(t, 2) for name, t in by_metric.items()}
    # The shared draws, computed here: four cases, 2,000 resamples, seed 0.
    draws = np.random.default_rng(0).integers(0, 4, size=(2000, 4), dtype=np.int32)
    for name in ("m.balanced", "m.mirror"):
        means = np.array([np.mean(v) for v in matrices[name].values()])
        low, high = np.quantile(means[draws].mean(axis=1), [0.025, 0.975])
        found = together[name]
        assert (found.ci_low, found.ci_high) == pytest.approx((low, high), abs=1e-12)
