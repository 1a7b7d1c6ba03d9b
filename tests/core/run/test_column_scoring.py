"""A run's results scored from columns (``evaluate(..., as_columns=True)`` and
``column_scoring.column_results``) against the rows ``evaluate`` gives as objects:
the same rows in the same order, case failures and skips included, and a bug in
column scoring costing only the faulty case."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.config.settings import RunSettings
from ragproof_core.metrics.conversation_columns import CONVERSATION_READS
from ragproof_core.metrics.registry import REGISTRY, MetricGroup, MetricSpec, Registry
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.metrics.retrieval import RETRIEVAL_GROUP, SCORED_RETRIEVAL
from ragproof_core.model import CaseOutput, Status, TurnOf
from ragproof_core.run.column_scoring import ROW_READS, column_results
from ragproof_core.run.evaluate import Selection, evaluate, evaluate_recorded, recording_scoring
from ragproof_core.store.run_store import parquet_columns
from ragproof_core.store.schema import encode_dataset, encode_outputs
from tests.core.metrics.test_retrieval_batch import collection


class Recorded:
    """Hands back each case's generated output; a case whose id ends in 7 fails (with
    an empty error text when it ends in 77)."""

    shares_event_loop = True
    reports_latency = True

    def __init__(self, outputs: list[CaseOutput]) -> None:
        self._by_id = {output.case_id: output for output in outputs}

    async def run_case(self, case):
        if case.id.endswith("77"):
            return CaseOutput(case.id, error="")
        if case.id.endswith("7"):
            return CaseOutput(case.id, error=f"upstream down for {case.id}")
        return self._by_id[case.id]


SELECTIONS = (
    (),  # every default metric: from columns too, as the run has no judge
    SCORED_RETRIEVAL[:4],
    SCORED_RETRIEVAL,
    ("retrieval.ndcg_at_k@2", "retrieval.recall_at_k@1", *SCORED_RETRIEVAL),
)


@pytest.mark.parametrize("selected", SELECTIONS, ids=["default", "four", "nine", "cutoffs"])
def test_rows_as_columns_equal_rows_as_objects(selected):
    cases, outputs, _, _ = collection(seed=3, n=300, document=False)
    settings = RunSettings(metrics=selected)
    as_objects = asyncio.run(evaluate(cases, Recorded(outputs), settings))
    as_columns = asyncio.run(evaluate(cases, Recorded(outputs), settings, as_columns=True))
    assert Selection.from_settings(settings).scored_from_columns == bool(selected)
    # Without a judge every selection here scores from columns, the default one too
    # (each metric has score_columns: tests/core/metrics/test_column_scorers.py).
    assert as_columns.results == []
    assert as_columns.columns.results() == as_objects.results
    assert as_columns.outputs_table.equals(encode_outputs("", as_objects.outputs))
    assert as_columns.status_counts() == as_objects.status_counts()
    statuses = {r.status for r in as_objects.results}
    assert {Status.SCORED, Status.SKIPPED, Status.ERROR} <= statuses
    assert "case failed" in {r.reason for r in as_objects.results}


def test_groups_interleave_in_the_runs_order():
    cases, outputs, _, _ = collection(seed=5, n=60, document=False)
    outputs[3] = CaseOutput(outputs[3].case_id, error="boom")
    names = SCORED_RETRIEVAL[:4]
    settings = RunSettings(metrics=names)
    expected = asyncio.run(evaluate(cases, _Given(outputs), settings)).results
    # One group asked for its names in two parts, in an order unlike the run's.
    score = RETRIEVAL_GROUP.score_columns
    scorers = [(score, (names[3], names[0])), (score, (names[2], names[1]))]
    dataset = encode_dataset("", cases)
    scored = column_results(dataset, encode_outputs("", outputs), settings, scorers, names)
    assert scored.results() == expected
    assert [r.status for r in expected[3 * 4 : 4 * 4]] == [Status.ERROR] * 4


class _Given:
    shares_event_loop = True
    reports_latency = True

    def __init__(self, outputs: list[CaseOutput]) -> None:
        self._by_id = {output.case_id: output for output in outputs}

    async def run_case(self, case):
        return self._by_id[case.id]


def _faulty_columns(dataset, outputs, params, wanted):
    raise ZeroDivisionError("bug")


def _faulty_registry() -> Registry:
    """The registry with the retrieval group's column scoring raising (``_faulty_columns``)."""
    group = replace(RETRIEVAL_GROUP, score_columns=_faulty_columns)
    swapped = (
        m if m.group is not RETRIEVAL_GROUP else replace(m, group=group) for m in REGISTRY.metrics
    )
    return Registry(tuple(swapped))


def test_a_column_scoring_bug_falls_back_to_scoring_case_by_case():
    registry = _faulty_registry()
    cases, outputs, _, _ = collection(seed=9, n=40, document=False)
    settings = RunSettings(metrics=SCORED_RETRIEVAL[:4])
    expected = asyncio.run(evaluate(cases, _Given(outputs), settings)).results
    evaluation = asyncio.run(
        evaluate(cases, _Given(outputs), settings, registry=registry, as_columns=True)
    )
    assert isinstance(evaluation.columns, ResultColumns)
    assert evaluation.columns.results() == expected


def test_a_group_without_column_scoring_is_scored_as_objects():
    plain = MetricGroup("probe", ("probe.value",), score=lambda c, o, p, w: [])
    spec = MetricSpec("probe.value", True, "never", (), "a test metric", group=plain)
    selection = Selection(("retrieval.mrr", "probe.value"), REGISTRY.with_metrics([spec]))
    assert not selection.scored_from_columns
    assert Selection(("retrieval.mrr",)).scored_from_columns


def test_a_recorded_runs_rows_are_scored_from_its_tables_alone():
    cases, outputs, _, _ = collection(seed=11, n=300, document=True)
    # The stored recording holds the failures the adapter reports, as any output.
    outputs = [CaseOutput(o.case_id, error="boom") if i % 50 == 7 else o
               for i, o in enumerate(outputs)]  # fmt: skip
    settings = RunSettings(metrics=SCORED_RETRIEVAL, source_match="document", k=3)
    expected = asyncio.run(evaluate(cases, _Given(outputs), settings))
    recorded = encode_outputs("run-1", outputs)
    evaluation = evaluate_recorded(encode_dataset("run-1", cases), recorded, settings)
    assert evaluation.outputs == [] and evaluation.outputs_table is recorded
    assert evaluation.columns.results() == expected.results
    assert (evaluation.cases, evaluation.case_failures) == (300, expected.case_failures) == (300, 6)
    assert evaluation.failures(2) == expected.failures(2) == [("q7", "boom"), ("q57", "boom")]
    assert evaluation.status_counts() == expected.status_counts()
    assert repr(evaluation) == repr(expected)


def test_recorded_rows_not_scored_from_columns_are_left_to_evaluate():
    cases, outputs, _, _ = collection(seed=12, n=20, document=False)
    dataset, recorded = encode_dataset("r", cases), encode_outputs("r", outputs)
    assert evaluate_recorded(dataset, recorded, RunSettings()) is None  # default metrics
    turns = [replace(c, turn=TurnOf("conv", i + 1, len(cases))) for i, c in enumerate(cases)]
    four = RunSettings(metrics=SCORED_RETRIEVAL[:4])
    # Turns are scored from columns too (tests/core/run/test_turn_replay.py), but for
    # the selections a judge scores.
    assert evaluate_recorded(encode_dataset("r", turns), recorded, RunSettings()) is None
    assert evaluate_recorded(dataset, recorded, four) is not None


def test_a_column_scoring_bug_on_recorded_rows_falls_back_to_scoring_case_by_case():
    cases, outputs, _, _ = collection(seed=13, n=40, document=False)
    settings = RunSettings(metrics=SCORED_RETRIEVAL[:4])
    expected = asyncio.run(evaluate(cases, _Given(outputs), settings)).results
    evaluation = evaluate_recorded(
        encode_dataset("r", cases), encode_outputs("r", outputs), settings, _faulty_registry()
    )
    assert evaluation.columns.results() == expected


def _projected(tmp_path, table: pa.Table, columns) -> pa.Table:
    """``table`` as a shard reads it from its Parquet file with only ``columns``."""
    path = tmp_path / f"{table.schema.names[1]}.parquet"
    pq.write_table(table, path)
    parquet = pq.ParquetFile(path)
    return parquet.read(columns=parquet_columns(parquet, columns))


@pytest.mark.parametrize("selected", SELECTIONS[1:], ids=["four", "nine", "cutoffs"])
@pytest.mark.parametrize("match", ["chunk", "document"])
def test_a_recorded_runs_rows_score_the_same_from_the_columns_they_declare(
    tmp_path, selected, match
):
    cases, outputs, _, _ = collection(seed=14, n=200, document=match == "document")
    outputs = [CaseOutput(o.case_id, error="boom") if i % 40 == 3 else o
               for i, o in enumerate(outputs)]  # fmt: skip
    settings = RunSettings(metrics=selected, source_match=match, k=3)
    plan = recording_scoring(settings, REGISTRY, has_judge=False, has_turns=False)
    assert plan is not None and "retrieved.id" in plan.columns
    dataset, recorded = encode_dataset("r", cases), encode_outputs("r", outputs)
    read = _projected(tmp_path, dataset, plan.columns), _projected(tmp_path, recorded, plan.columns)
    assert "question" not in read[0].column_names and "answer_text" not in read[1].column_names
    whole = evaluate_recorded(dataset, recorded, settings)
    evaluation = evaluate_recorded(*read, settings)
    assert evaluation.columns.results() == whole.columns.results()
    assert evaluation.failures(3) == whole.failures(3)
    assert evaluation.case_failures == whole.case_failures == 5


def test_which_recorded_runs_score_from_columns_and_read_which_columns():
    four = RunSettings(metrics=SCORED_RETRIEVAL[:4])
    plan = recording_scoring(four, REGISTRY, has_judge=True, has_turns=False)
    assert plan is not None and set(plan.columns) == {
        *ROW_READS,
        *RETRIEVAL_GROUP.column_reads,
    }
    # A run with turns also reads what keeps its conversations whole and replays them.
    turns = recording_scoring(four, REGISTRY, has_judge=False, has_turns=True)
    assert set(turns.columns) == {*plan.columns, *CONVERSATION_READS}
    assert recording_scoring(RunSettings(), REGISTRY, has_judge=True, has_turns=True) is None
    # Every default metric scores columns without a judge, not all declaring their reads.
    default = recording_scoring(RunSettings(), REGISTRY, has_judge=False, has_turns=False)
    assert default is not None and default.columns is None
    assert recording_scoring(RunSettings(), REGISTRY, has_judge=True, has_turns=False) is None


def test_a_column_scoring_bug_on_columns_read_alone_scores_the_whole_rows_case_by_case(tmp_path):
    cases, outputs, _, _ = collection(seed=15, n=40, document=False)
    settings = RunSettings(metrics=SCORED_RETRIEVAL[:4])
    expected = asyncio.run(evaluate(cases, _Given(outputs), settings)).results
    dataset, recorded = encode_dataset("r", cases), encode_outputs("r", outputs)
    columns = RETRIEVAL_GROUP.column_reads
    evaluation = evaluate_recorded(
        _projected(tmp_path, dataset, columns),
        _projected(tmp_path, recorded, columns),
        settings,
        _faulty_registry(),
        full_rows=lambda: (dataset, recorded),
    )
    assert evaluation.columns.results() == expected
