"""Tests for ragproof_core/metrics/aggregate.py (metrics.md, "Aggregation")."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from ragproof_core.metrics.aggregate import P50, P95, MetricSummary, nearest_rank, summarize
from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.model import MetricResult, Status, case_error, scored, skipped
from tests.core.metrics.fixture_cases import FIXTURES, load_jsonl

# Sorted scores 1..n, so the value found is the 1-based position picked.
# p50 position = max(1, ceil(n / 2)); p95 position = max(1, ceil(0.95 n)).
NEAREST_RANK = [
    # n, p50, p95
    (1, 1.0, 1.0),  # ceil(0.5) = 1, ceil(0.95) = 1
    (2, 1.0, 2.0),  # ceil(1.0) = 1, ceil(1.9) = 2
    (19, 10.0, 19.0),  # ceil(9.5) = 10, ceil(18.05) = 19
    (20, 10.0, 19.0),  # ceil(10) = 10, ceil(19.0) = 19 exactly, not 20
    (21, 11.0, 20.0),  # ceil(10.5) = 11, ceil(19.95) = 20
]


@pytest.mark.parametrize(("n", "p50", "p95"), NEAREST_RANK)
def test_nearest_rank_p50_p95(n: int, p50: float, p95: float) -> None:
    values = [float(i) for i in range(1, n + 1)]
    assert nearest_rank(values, P50) == p50
    assert nearest_rank(values, P95) == p95
    # A float or decimal-string fraction means the same exact rational.
    assert nearest_rank(values, 0.5) == p50
    assert nearest_rank(values, 0.95) == p95
    assert nearest_rank(values, "0.95") == p95


def test_nearest_rank_uses_exact_arithmetic() -> None:
    values = [float(i) for i in range(1, 101)]
    # In floats 0.07 * 100 = 7.000000000000001 and ceil gives 8; the position is 7.
    assert 0.07 * 100 > 7
    assert nearest_rank(values, 0.07) == 7.0
    assert nearest_rank(values, Fraction(7, 100)) == 7.0
    # 0.29 * 100 = 28.999999999999996 in floats: ceil gives 29 either way.
    assert nearest_rank(values, 0.29) == 29.0


def test_nearest_rank_bounds() -> None:
    values = [0.1, 0.4, 0.9]
    assert nearest_rank(values, 0) == 0.1  # max(1, ceil(0)) = position 1
    assert nearest_rank(values, 1) == 0.9
    with pytest.raises(ValueError, match="empty"):
        nearest_rank([], P50)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nearest_rank(values, 1.5)


def result_from(line: dict) -> MetricResult:
    return MetricResult(
        line["case_id"],
        line["metric"],
        Status(line["status"]),
        line.get("value"),
        line.get("reason"),
    )


def test_summarize_mixed_statuses() -> None:
    results = [result_from(line) for line in load_jsonl("summary_results.jsonl")]
    expected = json.loads((FIXTURES / "summary_expected.json").read_text(encoding="utf-8"))
    assert [summary.to_dict() for summary in summarize(results)] == expected["summaries"]


def test_case_errors_count_as_errored_and_enter_no_mean() -> None:
    results = [
        scored("c1", "retrieval.mrr", 1.0),
        scored("c2", "retrieval.mrr", 0.5),
        case_error("c3", "retrieval.mrr", "adapter raised ValueError: bad"),
        case_error("c4", "retrieval.mrr", "adapter call timed out after 60s"),
    ]
    (summary,) = summarize(results, ["retrieval.mrr"])
    assert summary == MetricSummary("retrieval.mrr", 0.75, 0.5, 1.0, 2, 0, 2, 0, 0)


def test_nothing_scored_gives_none_stats_not_zero() -> None:
    results = [
        skipped("c1", "echo.exact_match", "case has no expected_answer"),
        case_error("c2", "echo.exact_match", "adapter raised RuntimeError: boom"),
    ]
    summaries = summarize(results)
    assert [s.metric for s in summaries] == list(METRIC_NAMES)
    echo = summaries[METRIC_NAMES.index("echo.exact_match")]
    assert echo == MetricSummary("echo.exact_match", None, None, None, 0, 1, 1, 0, 0)
    assert summaries[0] == MetricSummary(METRIC_NAMES[0], None, None, None, 0, 0, 0, 0, 0)


def test_summarize_empty_input_lists_every_metric() -> None:
    assert [s.to_dict() for s in summarize([], ["b", "a"])] == [
        {
            "metric": name,
            "mean": None,
            "p50": None,
            "p95": None,
            "scored": 0,
            "skipped": 0,
            "errored": 0,
            "not_applicable": 0,
            "judge_errors": 0,
        }
        for name in ("b", "a")
    ]


def test_summarize_mean_is_order_independent() -> None:
    # Naive left-to-right sums differ: 0.1 + 0.2 + 0.3 = 0.6000000000000001 but
    # 0.3 + 0.2 + 0.1 = 0.6. The correctly rounded sum does not.
    results = [scored(f"c{i}", "m", value) for i, value in enumerate([0.1, 0.2, 0.3])]
    forward = summarize(iter(results), ["m"])  # an iterator: read in one pass
    backward = summarize(reversed(results), ["m"])
    assert forward == backward
    assert (forward[0].p50, forward[0].p95, forward[0].scored) == (0.2, 0.3, 3)
    # Ten scores of 0.1 average to 0.1 (a naive sum gives 0.09999999999999999).
    tenths = summarize((scored(f"c{i}", "m", 0.1) for i in range(10)), ["m"])
    assert tenths[0].mean == 0.1


def test_summarize_rejects_unknown_status() -> None:
    bad = MetricResult.__new__(MetricResult)
    for name, value in zip(
        MetricResult.__slots__, ("c9", "m", "exploded", None, None, None), strict=True
    ):
        object.__setattr__(bad, name, value)
    with pytest.raises(ValueError, match="case 'c9', metric 'm': unknown status 'exploded'"):
        summarize([bad], ["m"])
