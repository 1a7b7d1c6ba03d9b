"""A recorded run's conversations scored from columns (``evaluate_recorded``: turns
replayed by ``run.turn_replay``, a conversation's own rows from its columns) against
the rows the object path gives (``evaluate`` replaying the recording turn by turn with
``RecordedAdapter``): the same outputs and the same rows in the same order.

The fixture (tests/fixtures/turn_replay) mixes single cases with conversations whose
turns fail in every way CONTRACT section 16 lists: c1's second turn fails and its
recorded third turn is never replayed, c2 has one turn, c3's recording lacks its last
turn, s2 failed, c4 succeeds, c5 has no recorded line, c6's first turn fails."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics.conversation import plan_knowledge_retention
from ragproof_core.metrics.conversation_columns import conversations_of
from ragproof_core.metrics.registry import REGISTRY, Registry
from ragproof_core.metrics.retrieval import SCORED_RETRIEVAL
from ragproof_core.model import case_error
from ragproof_core.run.evaluate import evaluate, evaluate_recorded, recording_scoring
from ragproof_core.run.turn_replay import replayed_turns, replays_as_recorded
from ragproof_core.store.recording import aligned_batches, dataset_keys, staged_recording
from ragproof_core.store.run_store import parquet_columns
from ragproof_core.store.schema import decode_outputs, encode_dataset, encode_outputs

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "turn_replay"
RUN = "run-1"
RETENTION = "conversation.knowledge_retention"
SELECTIONS = ((), SCORED_RETRIEVAL[:4], (*SCORED_RETRIEVAL[:4], RETENTION), (RETENTION,))


def stored_run() -> tuple[list, pa.Table, pa.Table]:
    """The fixture's cases, and its dataset and recorded_outputs rows as the run's
    dataset step stores them (``store.recording``)."""
    cases = load_dataset(FIXTURE / "cases.jsonl")
    ids, turn_cases = dataset_keys(cases)
    with staged_recording(str(FIXTURE / "outputs.jsonl"), RUN) as staged:
        recorded = pa.concat_tables(aligned_batches(staged, ids, turn_cases, RUN, 5))
    return cases, encode_dataset(RUN, cases), recorded


def replayed_as_objects(cases: list, settings: RunSettings):
    return asyncio.run(evaluate(cases, RecordedAdapter(str(FIXTURE / "outputs.jsonl")), settings))


@pytest.mark.parametrize(
    "selected", SELECTIONS, ids=["default", "four", "four+retention", "retention"]
)
def test_turns_from_columns_equal_turns_replayed_as_objects(selected):
    cases, dataset, recorded = stored_run()
    settings = RunSettings(metrics=selected)
    expected = replayed_as_objects(cases, settings)
    evaluation = evaluate_recorded(dataset, recorded, settings, has_judge=False)
    assert evaluation is not None and evaluation.outputs == []
    assert evaluation.columns.results() == expected.results
    assert evaluation.outputs_table.to_pylist() == encode_outputs(RUN, expected.outputs).to_pylist()
    assert evaluation.status_counts() == expected.status_counts()
    assert (
        (evaluation.cases, evaluation.case_failures)
        == (expected.cases, expected.case_failures)
        == (15, 8)
    )
    assert evaluation.failures(10) == expected.failures(10)


def test_a_turn_after_a_failed_one_replays_as_failed_and_the_conversation_rows_follow_it():
    cases, dataset, recorded = stored_run()
    settings = RunSettings(metrics=(SCORED_RETRIEVAL[1], "conversation.knowledge_retention"))
    evaluation = evaluate_recorded(dataset, recorded, settings, has_judge=False)
    errors = dict(
        zip(
            *(evaluation.outputs_table.column(c).to_pylist() for c in ("case_id", "error")),
            strict=True,
        )
    )
    assert {case_id: error for case_id, error in errors.items() if error} == {
        "c1#2": "upstream timed out",
        "c1#3": "an earlier turn failed",
        "c3#3": "no recorded output for case c3#3",
        "s2": "connection reset",
        "c5#1": "no recorded output for case c5#1",
        "c5#2": "an earlier turn failed",
        "c6#1": "rate limited",
        "c6#2": "an earlier turn failed",
    }
    # c1#3 was recorded, but never replayed: nothing of its line is kept.
    c1_3 = evaluation.outputs_table.to_pylist()[3]
    assert c1_3["case_id"] == "c1#3" and c1_3["retrieved"] is None and c1_3["latency_s"] is None
    rows = [
        (r.case_id, r.metric, r.status.value, r.value, r.reason)
        for r in evaluation.columns.results()
    ]
    assert rows == [
        ("s1", "retrieval.recall_at_k", "scored", 1.0, None),
        ("c1#1", "retrieval.recall_at_k", "scored", 1.0, None),
        ("c1#2", "retrieval.recall_at_k", "error", None, "upstream timed out"),
        ("c1#3", "retrieval.recall_at_k", "error", None, "an earlier turn failed"),
        ("c1", "conversation.knowledge_retention", "error", None,
         "turn 2 failed: upstream timed out"),
        ("c2#1", "retrieval.recall_at_k", "scored", 1.0, None),
        ("c2", "conversation.knowledge_retention", "not_applicable", None,
         "a one-turn conversation has no earlier turn to retain"),
        ("c3#1", "retrieval.recall_at_k", "scored", 1.0, None),
        ("c3#2", "retrieval.recall_at_k", "scored", 1.0, None),
        ("c3#3", "retrieval.recall_at_k", "error", None, "no recorded output for case c3#3"),
        ("c3", "conversation.knowledge_retention", "error", None,
         "turn 3 failed: no recorded output for case c3#3"),
        ("s2", "retrieval.recall_at_k", "error", None, "connection reset"),
        ("c4#1", "retrieval.recall_at_k", "scored", 1.0, None),
        ("c4#2", "retrieval.recall_at_k", "scored", 1.0, None),
        ("c4", "conversation.knowledge_retention", "skipped", None,
         "no judge configured (set RAGPROOF_JUDGE_MODEL)"),
        ("c5#1", "retrieval.recall_at_k", "error", None, "no recorded output for case c5#1"),
        ("c5#2", "retrieval.recall_at_k", "error", None, "an earlier turn failed"),
        ("c5", "conversation.knowledge_retention", "error", None,
         "turn 1 failed: no recorded output for case c5#1"),
        ("c6#1", "retrieval.recall_at_k", "error", None, "rate limited"),
        ("c6#2", "retrieval.recall_at_k", "error", None, "an earlier turn failed"),
        ("c6", "conversation.knowledge_retention", "error", None, "turn 1 failed: rate limited"),
    ]  # fmt: skip


def test_only_the_columns_a_run_declares_are_read(tmp_path):
    cases, dataset, recorded = stored_run()
    settings = RunSettings(metrics=SCORED_RETRIEVAL[:4])
    plan = recording_scoring(settings, REGISTRY, has_judge=False, has_turns=True)
    assert {"conversation_id", "turn", "turns", "error"} <= set(plan.columns)
    read = []
    for name, table in (("dataset", dataset), ("recorded", recorded)):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path)
        parquet = pq.ParquetFile(path)
        read.append(parquet.read(columns=parquet_columns(parquet, plan.columns)))
    evaluation = evaluate_recorded(*read, settings, has_judge=False)
    assert "question" not in read[0].column_names and "answer_text" not in read[1].column_names
    assert evaluation.columns.results() == replayed_as_objects(cases, settings).results


def test_a_run_replays_its_recording_as_it_is_unless_a_failed_turn_has_a_later_one():
    _, dataset, recorded = stored_run()
    ids = dataset.column("conversation_id").to_pylist()
    starts = [row for row, c in enumerate(ids) if c is None or row == 0 or ids[row - 1] != c]
    failed = recorded.column("error").is_valid().to_numpy(zero_copy_only=False)
    assert not replays_as_recorded(starts, failed)  # c1, c5 and c6
    # Failures in last turns (c3) and in single cases (s2) replay as recorded.
    only_last = failed & np.isin(np.arange(len(failed)), [7, 8])
    assert only_last.sum() == 2 and replays_as_recorded(starts, only_last)
    assert replays_as_recorded([0, 1, 2], np.array([True, False, True]))
    assert replays_as_recorded([], np.zeros(0, dtype=bool))
    settings = RunSettings(metrics=SCORED_RETRIEVAL[:4])
    plan = recording_scoring(settings, REGISTRY, has_judge=False, has_turns=True, as_recorded=False)
    # Its shards then write the outputs they replay, which they read whole.
    assert plan.columns is None and not plan.outputs_as_recorded


def test_replaying_a_recording_with_no_failed_turn_changes_nothing():
    _, dataset, recorded = stored_run()
    clean = recorded.set_column(
        recorded.schema.get_field_index("error"), "error", pa.nulls(recorded.num_rows, pa.string())
    )
    assert replayed_turns(clean, conversations_of(dataset, clean)) is clean
    assert len(decode_outputs(clean)) == len(dataset)


def _raises(*_args):
    raise RuntimeError("bug in the column form")


def _fails_on_c4(turns, outputs, has_judge, params=None):
    if turns[0].turn.conversation_id == "c4":
        raise ZeroDivisionError("bug for c4")
    return plan_knowledge_retention(turns, outputs, has_judge, params)


def test_a_bug_in_a_conversation_metric_s_column_form_costs_only_the_conversation_at_fault():
    cases, dataset, recorded = stored_run()
    settings = RunSettings(metrics=(SCORED_RETRIEVAL[1], RETENTION))
    expected = evaluate_recorded(dataset, recorded, settings, has_judge=False).columns.results()
    faulty = Registry(
        tuple(
            replace(m, conversation_columns=_raises, conversation=_fails_on_c4)
            if m.name == RETENTION
            else m
            for m in REGISTRY.metrics
        )
    )
    rows = evaluate_recorded(dataset, recorded, settings, faulty, has_judge=False)
    found = rows.columns.results()
    reason = "internal error while scoring: ZeroDivisionError: bug for c4"
    assert [r for r in found if r.case_id == "c4"] == [case_error("c4", RETENTION, reason)]
    assert [r for r in found if r.case_id != "c4"] == [r for r in expected if r.case_id != "c4"]
