"""A report holds the run's summaries and a bounded set of cases (CONTRACT section 10): its
worst cases, first failures and first obeyed injections, and an "All cases" table of the
first cases plus every case shown in full. Each set is found by SQL over the run's files
(present/report_queries.py) and equals what the same rows give in memory."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from ragproof_core.metrics.aggregate import summarize
from ragproof_core.metrics.registry import METRIC_NAMES, higher_is_better
from ragproof_core.model import (
    Answer,
    Case,
    CaseKind,
    CaseOutput,
    MetricResult,
    case_error,
    scored,
    skipped,
)
from ragproof_core.present.report_data import (
    KIND_CODES,
    ReportLimits,
    gather_report,
    histogram,
    mean_ci,
    refusal_matrix,
    worst_order,
)
from ragproof_core.store.run_store import RunRecord, RunStore

MRR, OVER = "retrieval.mrr", "robustness.overrefusal"
ABST, INJ = "robustness.abstention", "robustness.injection_resistance"
CASES = 60
T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def kind_of(i: int) -> CaseKind:
    return (
        CaseKind.INJECTION if i % 7 == 3 else CaseKind.UNANSWERABLE if i % 7 == 5 else CaseKind.QA
    )


def run_rows(seed: int) -> tuple[list[Case], list[CaseOutput], list[MetricResult]]:
    rng = random.Random(seed)
    cases, outputs, results = [], [], []
    for i in range(CASES):
        # Ids out of dataset order, so "dataset order" and "by id" differ.
        cid = f"c{(i * 37) % CASES:03d}"
        kind = kind_of(i)
        cases.append(Case(cid, f"question {cid}?", kind, ("d1",), None, "PWN-1", None))
        if i % 9 == 4:
            outputs.append(CaseOutput(cid, None, None, f"adapter failed on {cid}", 1.0))
            results += [case_error(cid, m, "adapter failed") for m in (MRR, OVER, ABST, INJ)]
            continue
        if i % 11 == 6:
            continue  # no output recorded at all
        outputs.append(CaseOutput(cid, Answer(f"answer {cid}", None, None), None, None, 0.2))
        results.append(scored(cid, MRR, rng.choice([0.0, 0.25, 0.5, 1.0])))
        if kind is CaseKind.QA:
            results.append(scored(cid, OVER, float(rng.random() < 0.3)))
        else:
            results.append(skipped(cid, OVER, "not an answerable case"))
        if kind is CaseKind.UNANSWERABLE:
            results.append(scored(cid, ABST, float(rng.random() < 0.5)))
        if kind is CaseKind.INJECTION:
            results.append(scored(cid, INJ, float(rng.random() < 0.4)))
    return cases, outputs, results


def write_run(store: RunStore, run_id: str, seed: int) -> tuple[list[Case], list, list]:
    cases, outputs, results = run_rows(seed)
    store.write_manifest(run_id, {"run_id": run_id, "dataset": "bounds.jsonl"})
    store.write_dataset(run_id, cases)
    half = len(outputs) // 2
    split = {o.case_id for o in outputs[:half]}
    for shard, (outs, rows) in enumerate(
        [
            (outputs[:half], [r for r in results if r.case_id in split]),
            (outputs[half:], [r for r in results if r.case_id not in split]),
        ]
    ):
        with store.results_writer(run_id, shard=shard) as writer:
            writer.write(outs, rows)
    store.write_summaries(run_id, summarize(results, METRIC_NAMES))
    store.write_run(
        RunRecord(
            run_id=run_id,
            dataset="bounds.jsonl",
            adapter="recorded",
            status="completed",
            started_at=T0,
            finished_at=T0 + timedelta(seconds=3),
            judge_model=None,
            prompt_hashes={},
            config_json=json.dumps({"run": {"k": 5, "source_match": "chunk"}}),
            cost_usd=None,
            cases=CASES,
            case_failures=0,
            judge_requests=0,
            cache_hits=0,
        )
    )
    return cases, outputs, results


LIMITS = ReportLimits(worst_cases=3, failures=2, injections=1, cases_listed=8)


@pytest.fixture(params=["local", "s3"])
def report(request, tmp_path):
    """The report of one run, on a local folder and on S3 (moto)."""
    root = tmp_path / "store" if request.param == "local" else request.getfixturevalue("s3_store")
    store = RunStore(root)
    cases, outputs, results = write_run(store, "r1", seed=5)
    return gather_report(store, "r1", limits=LIMITS), cases, outputs, results


def frame_of(results: list[MetricResult]) -> pd.DataFrame:
    return pd.DataFrame(
        [(r.case_id, r.metric, r.status.value, r.value) for r in results],
        columns=["case_id", "metric", "status", "value"],
    )


def test_worst_cases_histograms_and_intervals_equal_the_in_memory_ones(report) -> None:
    data, _, _, results = report
    frame = frame_of(results)
    blocks = {b["name"]: b for b in data["metrics"]}
    for metric in (MRR, OVER, ABST, INJ):
        rows = frame[frame["metric"] == metric]
        ordered = worst_order(rows, higher_is_better(metric))
        values = ordered["value"].tolist()
        assert blocks[metric]["worst"] == list(ordered["case_id"][: LIMITS.worst_cases])
        assert blocks[metric]["histogram"] == histogram(values)
        assert blocks[metric]["ci"] == [round(x, 4) for x in mean_ci(values)]
    assert data["refusal"] == refusal_matrix(frame)


def test_failures_and_obeyed_injections_are_the_first_few_with_their_totals(report) -> None:
    data, cases, outputs, results = report
    errors = {o.case_id: o.error for o in outputs}
    failed = [
        {"id": c.id, "error": errors.get(c.id, "no output recorded")}
        for c in cases
        if errors.get(c.id, "no output recorded") is not None
    ]
    assert len(failed) > LIMITS.failures
    assert (data["failures"], data["failures_total"]) == (failed[: LIMITS.failures], len(failed))
    obeyed = sorted(r.case_id for r in results if r.metric == INJ and r.value == 0.0)
    assert len(obeyed) > LIMITS.injections
    assert data["injections_obeyed"] == obeyed[: LIMITS.injections]
    assert data["injections_obeyed_total"] == len(obeyed)


def test_the_cases_table_lists_the_first_cases_and_every_case_shown_in_full(report) -> None:
    data, cases, _, results = report
    shown = set(data["details"])
    listed = [c for i, c in enumerate(cases) if i < LIMITS.cases_listed or c.id in shown]
    assert data["cases"] == {
        "ids": [c.id for c in listed],
        "kinds": "".join(KIND_CODES[c.kind.value] for c in listed),
    }
    assert len(listed) < CASES == data["cases_total"]
    frame = frame_of(results).set_index(["case_id", "metric"])
    for metric, scores in data["scores"].items():
        for i, case in enumerate(listed):
            key = (case.id, metric)
            if key not in frame.index:
                assert scores["s"][i] == "-"
                continue
            row = frame.loc[key]
            code = {"scored": "s", "skipped": "k", "error": "e"}[row["status"]]
            assert scores["s"][i] == code
            assert scores["v"][i] == (row["value"] if row["status"] == "scored" else None)


def test_the_report_stays_the_same_size_as_the_run_grows(tmp_path) -> None:
    # Ten times the cases, the same bounds: the same number of cases listed and in full.
    small, large = RunStore(tmp_path / "small"), RunStore(tmp_path / "large")
    write_run(small, "r", seed=1)
    cases, outputs, results = run_rows(seed=1)
    grown = [(cases, outputs, results)]
    for copy in range(1, 10):
        tag = f"-{copy}"
        grown.append(
            (
                [replace(c, id=c.id + tag) for c in cases],
                [replace(o, case_id=o.case_id + tag) for o in outputs],
                [replace(r, case_id=r.case_id + tag) for r in results],
            )
        )
    large.write_manifest("r", {"run_id": "r"})
    large.write_dataset("r", [c for part in grown for c in part[0]])
    with large.results_writer("r", shard=0) as writer:
        writer.write([o for part in grown for o in part[1]], [r for part in grown for r in part[2]])
    large.write_summaries("r", summarize([r for part in grown for r in part[2]], METRIC_NAMES))
    large.write_run(small.get_run("r"))
    a, b = (gather_report(s, "r", limits=LIMITS) for s in (small, large))
    assert b["cases_total"] == 10 * a["cases_total"]
    assert len(b["cases"]["ids"]) <= LIMITS.cases_listed + len(b["details"])
    assert len(b["details"]) <= len(a["details"])
    assert len(b["failures"]) == LIMITS.failures
    assert b["failures_total"] == 10 * a["failures_total"]
