"""Every default metric's rows from columns (``score_columns``) equal its rows scored
case by case, in a run without a judge: each skip reason, each scored branch, case
failures, agent trajectories and hops, over a small recording
(tests/fixtures/metrics/columns/) and over the demo datasets."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from ragproof_core.adapters.demo import DemoAgent, DemoRAG
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics.citation import CITATION_VALIDITY
from ragproof_core.metrics.registry import METRIC_NAMES, REGISTRY, Registry
from ragproof_core.model import Status
from ragproof_core.run.evaluate import Selection, evaluate, evaluate_recorded
from ragproof_core.store.schema import encode_dataset, encode_outputs

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "metrics" / "columns"
DEMO = REPO / "data" / "demo"


def both_ways(cases, adapter, settings):
    """The run's rows as objects and as columns, each from a run of its own."""
    as_objects = asyncio.run(evaluate(cases, adapter, settings))
    as_columns = asyncio.run(evaluate(cases, adapter, settings, as_columns=True))
    assert as_columns.columns is not None and as_columns.results == []
    return as_objects.results, as_columns.columns.results()


@pytest.mark.parametrize(
    "settings",
    [RunSettings(), RunSettings(k=1, source_match="document")],
    ids=["chunk-k5", "document-k1"],
)
def test_recorded_rows_as_columns_equal_rows_as_objects(settings):
    cases = load_dataset(FIXTURE / "cases.jsonl")
    adapter = RecordedAdapter(str(FIXTURE / "outputs.jsonl"))
    objects, columns = both_ways(cases, adapter, settings)
    assert columns == objects
    assert len(objects) == len(cases) * len(METRIC_NAMES)
    # The fixture reaches every status a run without a judge gives, and each metric
    # both skips and (but for the judged ones) scores.
    assert {r.status for r in objects} == {
        Status.SCORED,
        Status.SKIPPED,
        Status.NOT_APPLICABLE,
        Status.ERROR,
    }
    scored = Counter(r.metric for r in objects if r.status is Status.SCORED)
    never_scored = {m.name for m in REGISTRY.metrics if m.judge == "required"}
    assert set(scored) == set(METRIC_NAMES) - never_scored
    reasons = {r.reason for r in objects if r.status is Status.SKIPPED}
    assert {
        "answer has no citations",
        "no retrieved set to check citations against",
        "adapter produced no answer",
        "answer has no steps",
        "case has no expected_tools",
        "case has no expected_hops",
        "applies to injection cases only",
        "no judge configured (set RAGPROOF_JUDGE_MODEL)",
    } <= reasons


@pytest.mark.parametrize(
    ("dataset", "adapter"),
    [("cases.jsonl", DemoRAG), ("agent_cases.jsonl", DemoAgent)],
)
def test_demo_rows_as_columns_equal_rows_as_objects(dataset, adapter):
    cases = load_dataset(DEMO / dataset)
    objects, columns = both_ways(cases, adapter(), RunSettings())
    assert columns == objects
    assert len(objects) == len(cases) * len(METRIC_NAMES)


def test_only_a_run_without_a_judge_scores_them_from_columns():
    selection = Selection.from_settings(RunSettings())
    assert selection.column_scorers(has_judge=False, has_turns=False) is not None
    # A judged metric's rows need its judge; a conversation's own metrics have their
    # rows without one from columns too (MetricSpec.conversation_columns).
    assert selection.column_scorers(has_judge=True, has_turns=False) is None
    assert selection.column_scorers(has_judge=True, has_turns=True) is None
    assert selection.column_scorers(has_judge=False, has_turns=True) == (
        selection.column_scorers(has_judge=False, has_turns=False)
    )
    # Each selected name is given by exactly one scorer.
    scorers = selection.column_scorers(has_judge=False, has_turns=False)
    names = [name for _, given in scorers for name in given]
    assert sorted(names) == sorted(selection.case_names)


def test_a_recorded_run_without_a_judge_is_scored_from_its_tables_alone():
    cases = load_dataset(FIXTURE / "cases.jsonl")
    adapter = RecordedAdapter(str(FIXTURE / "outputs.jsonl"))
    settings = RunSettings()
    expected = asyncio.run(evaluate(cases, adapter, settings))
    dataset, recorded = encode_dataset("r", cases), encode_outputs("r", expected.outputs)
    evaluation = evaluate_recorded(dataset, recorded, settings, has_judge=False)
    assert evaluation.columns.results() == expected.results
    # Assumed judged unless said otherwise: judged metrics' rows are then the judge's.
    assert evaluate_recorded(dataset, recorded, settings) is None
    # A batch of the store's rows is a slice of its tables: the same rows for it.
    start, end = 5, 17
    names = len(METRIC_NAMES)
    part = evaluate_recorded(
        dataset.slice(start, end - start),
        recorded.slice(start, end - start),
        settings,
        has_judge=False,
    )
    assert part.columns.results() == expected.results[start * names : end * names]


def _faulty(dataset, outputs, params, wanted):
    raise ZeroDivisionError("bug")


def test_a_metric_whose_column_scoring_fails_is_scored_case_by_case_instead():
    broken = Registry(
        tuple(
            replace(m, score_columns=_faulty) if m.name == CITATION_VALIDITY else m
            for m in REGISTRY.metrics
        )
    )
    cases = load_dataset(FIXTURE / "cases.jsonl")
    adapter = RecordedAdapter(str(FIXTURE / "outputs.jsonl"))
    objects = asyncio.run(evaluate(cases, adapter, RunSettings())).results
    fallen_back = asyncio.run(
        evaluate(cases, adapter, RunSettings(), registry=broken, as_columns=True)
    )
    assert fallen_back.columns.results() == objects
