"""A run with repeats' trial strips in the report and the browser page (CONTRACT section
27): the first cases only (``ReportLimits.trial_cases``, ``report_queries.TRIAL_CASES``),
flaky cases first, with how many flaky cases and how many cases the run has, so the page
can say how many it leaves out. The run is written here: 12 cases x 3 trials, each
case's trials a pattern of its number, the expected strips computed in memory."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from ragproof_core.metrics.aggregate import summarize
from ragproof_core.model import Answer, Case, CaseKind, CaseOutput, case_error, scored
from ragproof_core.present.app_data import run_data
from ragproof_core.present.report_data import ReportLimits, gather_report
from ragproof_core.present.report_queries import TRIAL_CASES
from ragproof_core.store.run_store import RunRecord, RunStore

MRR, RECALL = "retrieval.mrr", "retrieval.recall_at_k"
CASES, TRIALS = 12, 3
T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def score(i: int, metric: str, trial: int) -> float | None:
    """Case i's score on ``trial``: None (an error) for case 4's 2nd mrr trial; every
    third case flaky on recall (1, 0, 1), case 7 flaky on mrr; the rest steady."""
    if metric == MRR:
        if i == 4 and trial == 2:
            return None
        return [1.0, 0.0, 0.5][trial - 1] if i == 7 else 0.5
    return [1.0, 0.0, 1.0][trial - 1] if i % 3 == 2 else 0.25 * (i % 4)


def write_trials_run(
    store: RunStore, run_id: str, cases: int = CASES
) -> dict[str, dict[str, list]]:
    """The run (``cases`` cases, coprime with 5), and each case's trials per metric as the
    strips should show them."""
    # Ids out of case order, so "flaky first, then by id" is not the written order.
    ids = [f"t{(i * 5) % cases:03d}" for i in range(cases)]
    store.write_manifest(run_id, {"run_id": run_id, "dataset": "trials.jsonl"})
    store.write_dataset(
        run_id, [Case(cid, f"question {cid}?", CaseKind.QA, ("d1",)) for cid in ids]
    )
    expected: dict[str, dict[str, list]] = {cid: {MRR: [], RECALL: []} for cid in ids}
    everything = []
    with store.results_writer(run_id, shard=0) as writer:
        for trial in range(1, TRIALS + 1):
            outputs, results = [], []
            for i, cid in enumerate(ids):
                outputs.append(
                    CaseOutput(cid, Answer(f"answer {trial}", None, None), None, None, 0.1)
                )
                for metric in (MRR, RECALL):
                    value = score(i, metric, trial)
                    expected[cid][metric].append(value)
                    results.append(
                        case_error(cid, metric, "judge down")
                        if value is None
                        else scored(cid, metric, value)
                    )
            writer.write(outputs, results, trial=trial)
            everything += results
    store.write_summaries(run_id, summarize(everything, [MRR, RECALL]))
    store.write_run(
        RunRecord(
            run_id=run_id,
            dataset="trials.jsonl",
            adapter="recorded",
            status="completed",
            started_at=T0,
            finished_at=T0 + timedelta(seconds=3),
            judge_model=None,
            prompt_hashes={},
            config_json=json.dumps({"run": {"k": 5, "repeats": TRIALS}}),
            cost_usd=None,
            cases=cases,
            case_failures=0,
            judge_requests=0,
            cache_hits=0,
        )
    )
    return expected


def strips_in_order(expected: dict[str, dict[str, list]]) -> list[tuple[str, bool]]:
    """Every case as (id, flaky), flaky cases first, then by id: computed in memory."""

    def flaky(trials: list) -> bool:
        scored_trials = [v for v in trials if v is not None]
        return max(scored_trials) - min(scored_trials) >= 0.5

    rows = [(cid, any(flaky(t) for t in metrics.values())) for cid, metrics in expected.items()]
    return sorted(rows, key=lambda row: (not row[1], row[0]))


@pytest.fixture(scope="module")
def trials_run(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("trials") / "store")
    return store, write_trials_run(store, "r1")


def test_the_report_shows_the_first_cases_flaky_first_and_counts_the_rest(trials_run):
    store, expected = trials_run
    ordered = strips_in_order(expected)
    flaky_total = sum(flaky for _, flaky in ordered)
    assert 0 < flaky_total < 7  # the cap below cuts through the steady cases

    shown = gather_report(store, "r1", limits=ReportLimits(trial_cases=7))
    assert shown["limits"]["trial_cases"] == 7
    trials = shown["trials"]
    assert (trials["repeats"], trials["flaky_total"], trials["cases_total"]) == (
        TRIALS,
        flaky_total,
        CASES,
    )
    assert [(c["id"], c["flaky"]) for c in trials["cases"]] == ordered[:7]
    for case in trials["cases"]:
        strips = expected[case["id"]]
        assert case["metrics"][MRR]["trials"] == strips[MRR]
        assert case["metrics"][RECALL]["trials"] == strips[RECALL]


def test_the_browser_page_and_the_default_report_show_at_most_trial_cases(trials_run):
    store, expected = trials_run
    ordered = strips_in_order(expected)
    record = store.get_run("r1")
    assert ReportLimits().trial_cases == TRIAL_CASES == 50
    for trials in (
        gather_report(store, "r1")["trials"],
        run_data(store, record, [record])["trials"],
    ):
        # Fewer cases than the cap: every case, nothing left out.
        assert [(c["id"], c["flaky"]) for c in trials["cases"]] == ordered
        assert trials["cases_total"] == CASES
