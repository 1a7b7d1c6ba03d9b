"""The p95 of the system.* metrics in compare (CONTRACT section 18): nearest-rank p95 of
each run over the paired cases and a paired bootstrap interval of its difference, checked
against numpy on the same seeded resamples; the gate's p95 rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ragproof_core.compare.comparison import RunSide, compare_runs
from ragproof_core.compare.gate import p95_regressed, regressions
from ragproof_core.compare.stats import paired_bootstrap_quantile_diff_ci
from tests.core.compare.test_comparison import record

SEED, RESAMPLES = 7, 2_000


def _latencies(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(mean=-1.0, sigma=0.6, size=n).round(4)


def test_the_interval_is_numpys_on_the_same_resamples():
    a = _latencies(40, 1)
    b = a * 1.3 + 0.05
    # numpy's own reading of the same draws: one (resamples x n) matrix of indices from
    # default_rng(seed), the 95th percentile by the inverted CDF (which is the nearest
    # rank), the 2.5% and 97.5% quantiles of the differences.
    idx = np.random.default_rng(SEED).integers(0, a.size, size=(RESAMPLES, a.size))
    diffs = np.percentile(b[idx], 95, axis=1, method="inverted_cdf") - np.percentile(
        a[idx], 95, axis=1, method="inverted_cdf"
    )
    expected = tuple(np.quantile(diffs, [0.025, 0.975]))
    got = paired_bootstrap_quantile_diff_ci(a, b, resamples=RESAMPLES, seed=SEED)
    assert got == pytest.approx(expected, abs=0, rel=1e-15)


def test_blocks_draw_the_same_stream_as_one_matrix():
    """A large n splits the resamples into row blocks; the draws are the same."""
    a = _latencies(5_000, 2)
    b = a + _latencies(5_000, 3) * 0.1
    idx = np.random.default_rng(SEED).integers(0, a.size, size=(1_000, a.size))
    diffs = np.percentile(b[idx], 95, axis=1, method="inverted_cdf") - np.percentile(
        a[idx], 95, axis=1, method="inverted_cdf"
    )
    got = paired_bootstrap_quantile_diff_ci(a, b, resamples=1_000, seed=SEED)
    assert got == tuple(np.quantile(diffs, [0.025, 0.975]))


def test_no_pairs_is_no_interval_and_unequal_lengths_are_refused():
    assert paired_bootstrap_quantile_diff_ci([], []) is None
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap_quantile_diff_ci([1.0], [1.0, 2.0])


def _side(run_id: str, latencies: dict[str, float | None]) -> RunSide:
    rows = [
        {
            "run_id": run_id,
            "case_id": case_id,
            "metric": "system.latency_s",
            "status": "skipped" if value is None else "scored",
            "value": value,
        }
        for case_id, value in latencies.items()
    ]
    return RunSide(record(run_id), pd.DataFrame(rows))


def test_compare_reports_the_p95_of_a_system_metric_over_the_paired_cases():
    a = _latencies(30, 4)
    b = a + 0.2
    ids = [f"t{i:02d}" for i in range(30)]
    side_a = _side("run-a", {**dict(zip(ids, a, strict=True)), "t99": 50.0})
    # t99 is skipped in B (no latency reported): not paired, so it is in no p95.
    side_b = _side("run-b", {**dict(zip(ids, b, strict=True)), "t99": None})
    comparison = compare_runs(side_a, side_b)
    (latency,) = comparison.metrics
    p95 = latency.p95
    position = math.ceil(0.95 * 30) - 1
    assert p95.a == np.sort(a)[position] and p95.b == np.sort(b)[position]
    assert p95.delta == p95.b - p95.a
    ci = paired_bootstrap_quantile_diff_ci(a, b, seed=comparison.seed)
    assert (p95.ci_low, p95.ci_high) == ci
    assert p95.ci_low == pytest.approx(0.2) and p95.ci_high == pytest.approx(0.2)
    assert comparison.to_dict()["metrics"]["system.latency_s"]["p95"] == p95.to_dict()
    assert "p95 A" in comparison.render_table()
    assert p95_regressed(latency, margin=0.0) and not p95_regressed(latency, margin=0.25)
    assert regressions(comparison, margin=0.25) == []


def test_a_tail_that_only_may_have_moved_does_not_regress():
    """Mostly the same latencies, one slow case in B: the p95 moves but its interval
    reaches 0, so the gate does not fire on the tail."""
    a = _latencies(40, 5)
    b = a.copy()
    b[3] += 5.0
    ids = [f"t{i:02d}" for i in range(40)]
    comparison = compare_runs(
        _side("run-a", dict(zip(ids, a, strict=True))),
        _side("run-b", dict(zip(ids, b, strict=True))),
    )
    (latency,) = comparison.metrics
    assert latency.p95.ci_low <= 0.0 < latency.p95.ci_high
    assert not p95_regressed(latency, margin=0.0)


def test_metrics_outside_the_system_family_have_no_p95():
    frame = pd.DataFrame(
        [
            {"case_id": "c1", "metric": "retrieval.mrr", "status": "scored", "value": 1.0},
            {"case_id": "c2", "metric": "retrieval.mrr", "status": "scored", "value": 0.5},
        ]
    )
    comparison = compare_runs(RunSide(record("run-a"), frame), RunSide(record("run-b"), frame))
    assert comparison.metrics[0].p95 is None
    assert "p95" not in comparison.to_dict()["metrics"]["retrieval.mrr"]
