"""Adapter faults in a real materialization: raising, hanging past run.timeout_s, and
malformed output (a bare string, a chunk without id, citations that are not a list),
mixed with good cases. The run completes, every case has a row for every metric, the
failing cases are `error` everywhere with the runner's error text, and the summaries
count them in `errored` and keep them out of every mean."""

from __future__ import annotations

import math

import pytest

from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.store.run_store import RunStore
from tests.faults.conftest import FAULTS, materialize, query, summaries
from tests.support.fault_adapters import EXPECTED_ERRORS

DATASET = FAULTS / "adapter_faults.jsonl"
CONFIG = FAULTS / "adapter_faults.toml"
GOOD = ("g1", "g2", "g3")
FAILING = {f"f-{mode}": error for mode, error in EXPECTED_ERRORS.items()}

NO_JUDGE = "no judge configured (set RAGPROOF_JUDGE_MODEL)"


def _stats(mean, p50, p95, scored, skipped=0):
    return {
        "mean": mean,
        "p50": p50,
        "p95": p95,
        "scored": scored,
        "skipped": skipped,
        "errored": len(FAILING),
        "not_applicable": 0,
        "judge_errors": 0,
    }


NOTHING_SCORED = _stats(None, None, None, 0, skipped=3)
NDCG_G2 = 1 / math.log2(3)  # the relevant chunk at rank 2, one relevant id

# Over g1, g2, g3 only (k = 2): g1 finds d1 at rank 1, g2 finds d2 at rank 2, g3 finds
# nothing; all three cite d1, which they retrieved; g1's answer equals its expected
# answer, g2's does not, g3 has none; none of the answers is a refusal.
EXPECTED = {
    "retrieval.precision_at_k": _stats(1 / 3, 0.5, 0.5, 3),
    "retrieval.recall_at_k": _stats(2 / 3, 1.0, 1.0, 3),
    "retrieval.mrr": _stats(0.5, 0.5, 1.0, 3),
    "retrieval.ndcg_at_k": _stats((1 + NDCG_G2) / 3, NDCG_G2, 1.0, 3),
    "generation.citation_validity": _stats(1.0, 1.0, 1.0, 3),
    "generation.groundedness": NOTHING_SCORED,
    "generation.citation_support": NOTHING_SCORED,
    "generation.answer_relevance": NOTHING_SCORED,
    "generation.completeness": NOTHING_SCORED,
    "echo.exact_match": _stats(0.5, 0.0, 1.0, 2, skipped=1),
    "robustness.injection_resistance": NOTHING_SCORED,
    "robustness.abstention": NOTHING_SCORED,
    "robustness.overrefusal": _stats(0.0, 0.0, 0.0, 3),
}


@pytest.mark.parametrize(
    "adapter",
    [
        "tests.support.fault_adapters:FaultyAdapter",
        "tests.support.fault_adapters:AsyncFaultyAdapter",
    ],
    ids=["sync", "async"],
)
def test_failing_cases_are_errors_in_every_metric_and_enter_no_mean(instance, store_path, adapter):
    result = materialize(
        instance, "faulty", dataset=str(DATASET), config_file=str(CONFIG), adapter=adapter
    )
    assert result.success

    record = RunStore(store_path).get_run("faulty")
    assert (record.status, record.cases, record.case_failures) == ("completed", 9, len(FAILING))
    assert query(store_path, "select run_id, status, cases, case_failures from runs") == [
        ("faulty", "completed", 9, 6)
    ]

    rows = query(store_path, "select case_id, metric, status, value, reason from case_results")
    assert len(rows) == 9 * len(METRIC_NAMES)
    assert {(case, metric) for case, metric, *_ in rows} == {
        (case, metric) for case in (*GOOD, *FAILING) for metric in METRIC_NAMES
    }
    failing_rows = sorted((c, m, s, v, r) for c, m, s, v, r in rows if c in FAILING)
    assert failing_rows == sorted(
        (case, metric, "error", None, error)
        for case, error in FAILING.items()
        for metric in METRIC_NAMES
    )
    # Good cases are never marked as failures, and without a judge the judge metrics skip.
    assert not [r for r in rows if r[0] in GOOD and r[2] == "error"]
    assert {r[4] for r in rows if r[0] in GOOD and r[1] == "generation.groundedness"} == {NO_JUDGE}

    got = summaries(store_path, "faulty")
    assert list(got) == list(METRIC_NAMES)
    for metric, expected in EXPECTED.items():
        stats = got[metric]
        for key in ("mean", "p50", "p95"):
            if expected[key] is None:
                assert stats[key] is None, (metric, key)
            else:
                assert stats[key] == pytest.approx(expected[key], rel=1e-12, abs=0), (metric, key)
        counts = {k: v for k, v in stats.items() if k not in ("mean", "p50", "p95")}
        assert counts == {k: v for k, v in expected.items() if k not in ("mean", "p50", "p95")}, (
            metric
        )
