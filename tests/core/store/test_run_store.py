from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragproof_core.data.dataset import load_dataset
from ragproof_core.model import (
    Answer,
    Case,
    CaseOutput,
    Chunk,
    ExpectedTool,
    RetrieveStep,
    ToolMatch,
    ToolStep,
    scored,
)
from ragproof_core.store import files
from ragproof_core.store.layout import SHARDED_TABLES, InvalidRunId
from ragproof_core.store.recording import StagedRecording
from ragproof_core.store.run_store import (
    REDACTED,
    RunNotFound,
    RunStore,
    is_secret_key,
    redact_secrets,
)
from ragproof_core.store.schema import encode_outputs
from ragproof_core.store.tables import RECORDED_OUTPUTS
from ragproof_core.store.views import CASE_RESULTS_COLUMNS
from tests.core.store import sample

CONVERSATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"


def test_every_table_round_trips_exactly(store: RunStore) -> None:
    sample.write_run(store, "r1")
    assert store.read_manifest("r1") == {"run_id": "r1", "dataset": "golden.jsonl"}
    assert store.read_dataset("r1") == sample.CASES
    assert store.read_outputs("r1") == sample.OUTPUTS
    assert store.read_case_results("r1") == sample.RESULTS
    assert store.get_run("r1") == sample.record("r1")
    assert store.summaries("r1") == [
        {
            "metric": "retrieval.precision_at_k",
            "mean": 0.4,
            "p50": 0.5,
            "p95": 1.0,
            "scored": 2,
            "skipped": 1,
            "errored": 1,
            "not_applicable": 0,
            "judge_errors": 0,
        },
        {
            "metric": "generation.groundedness",
            "mean": None,
            "p50": None,
            "p95": None,
            "scored": 0,
            "skipped": 1,
            "errored": 2,
            "not_applicable": 1,
            "judge_errors": 1,
        },
    ]


def test_optional_shapes_stay_distinct_after_a_round_trip(store: RunStore) -> None:
    sample.write_run(store, "r1")
    c1, c2, c3, c4 = store.read_outputs("r1")
    assert c1.answer.retrieved_chunks[0].metadata == {
        "document_id": "doc-1",
        "page": 3,
        "nested": {"x": [1, 2.5, None]},
    }
    assert c1.answer.retrieved_chunks[1].score is None
    assert c1.answer.retrieved_chunks[1].metadata == {}
    assert c1.retrieved[2].metadata is None
    assert (c2.answer.retrieved_chunks, c2.answer.citations, c2.retrieved) == (None, None, ())
    assert (c3.answer.text, c3.answer.retrieved_chunks, c3.answer.citations) == ("", (), ())
    assert c3.retrieved is None
    assert (c4.answer, c4.failed, c4.latency_s) == (None, True, 60.0)
    d1, d2, d3, d4 = store.read_dataset("r1")
    assert (d1.expected_source_ids, d2.expected_source_ids, d3.expected_source_ids) == (
        ("doc-1", "doc-2"),
        (),
        None,
    )
    assert (d2.metadata, d3.metadata, d4.metadata) == ({}, None, {})
    assert d4.expected_answer == "  yes  "


def test_summaries_accept_dicts_as_well_as_summary_objects(store: RunStore) -> None:
    store.write_manifest("r1", {})
    store.write_summaries("r1", [sample.SUMMARIES[0].__dict__])
    assert store.summaries("r1")[0]["p95"] == 1.0
    with pytest.raises(ValueError, match="lacks field 'judge_errors'"):
        store.write_summaries(
            "r1",
            [
                {
                    "metric": "m",
                    "mean": None,
                    "p50": None,
                    "p95": None,
                    "scored": 0,
                    "skipped": 0,
                    "errored": 0,
                    "not_applicable": 0,
                }
            ],
        )
    with pytest.raises(ValueError, match="scored must be a count, got 1.5"):
        store.write_summaries("r1", [replace(sample.SUMMARIES[0], scored=1.5)])


def test_case_results_frame_has_the_view_columns(store: RunStore) -> None:
    sample.write_run(store, "r1")
    frame = store.case_results_frame("r1")
    assert list(frame.columns) == list(CASE_RESULTS_COLUMNS)
    assert len(frame) == len(sample.RESULTS)
    first = frame.iloc[0]
    assert (first["run_id"], first["case_id"], first["metric"], first["status"]) == (
        "r1",
        "c1",
        "retrieval.precision_at_k",
        "scored",
    )
    assert first["value"] == 0.0
    assert math.isnan(frame.iloc[1]["value"])


def test_unknown_runs_raise_run_not_found(store: RunStore) -> None:
    with pytest.raises(RunNotFound, match="'nope': no such run in the store") as caught:
        store.read_manifest("nope")
    assert isinstance(caught.value, KeyError)
    for call in (
        store.read_dataset,
        store.read_outputs,
        store.read_case_results,
        store.summaries,
        store.get_run,
    ):
        with pytest.raises(RunNotFound):
            call("nope")
    with pytest.raises(RunNotFound):  # the manifest is written first
        store.write_dataset("nope", sample.CASES)
    store.write_manifest("started", {})
    with pytest.raises(RunNotFound, match="'started': the run has not finished"):
        store.get_run("started")
    with pytest.raises(FileNotFoundError, match="run 'started' has no outputs table yet"):
        store.read_outputs("started")


def test_store_methods_reject_path_escaping_run_ids(store: RunStore) -> None:
    with pytest.raises(InvalidRunId):
        store.write_manifest("../x", {})
    with pytest.raises(InvalidRunId):
        store.read_case_results("../x")
    with pytest.raises(InvalidRunId):
        store.write_run(sample.record("../x"))
    assert not (store.layout.root / "x").exists()
    assert not (store.layout.runs_dir / "x").exists()


def test_run_record_rejects_naive_times_and_unknown_status() -> None:
    with pytest.raises(ValueError, match="started_at must be a timezone-aware datetime"):
        replace(sample.record("r1"), started_at=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="status must be one of running, completed, aborted:"):
        replace(sample.record("r1"), status="exploded")


def test_case_results_reject_unknown_status(store: RunStore) -> None:
    store.write_manifest("r1", {})
    bogus = scored("c1", "retrieval.mrr", 1.0)
    object.__setattr__(bogus, "status", "exploded")
    with pytest.raises(ValueError, match="unknown metric result status\\(es\\): exploded"):
        store.write_case_results("r1", [bogus])


def test_secret_keys_are_redacted_in_manifest_and_run_record(store: RunStore) -> None:
    manifest = {
        "adapter": {
            "target": "ragproof_core.adapters.http:HttpAdapter",
            "options": {
                "url": "https://svc:hunter2@rag.internal/answer",
                "headers": {"Authorization": "Bearer sk-live-1", "X-Api-Key": "sk-live-2"},
                "apiKey": "sk-live-3",
            },
        },
        "env": [{"OPENAI_API_KEY": "sk-live-4"}, {"db_password": "sk-live-5"}],
        "access_token": "sk-live-6",
        "client_secret": None,
        "judge": {"max_tokens": 512, "tokenizer": "cl100k", "model": "openai/gpt-4o-mini"},
    }
    store.write_manifest("r1", manifest)
    assert store.read_manifest("r1") == {
        "adapter": {
            "target": "ragproof_core.adapters.http:HttpAdapter",
            "options": {
                "url": f"https://svc:{REDACTED}@rag.internal/answer",
                "headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED},
                "apiKey": REDACTED,
            },
        },
        "env": [{"OPENAI_API_KEY": REDACTED}, {"db_password": REDACTED}],
        "access_token": REDACTED,
        "client_secret": None,
        "judge": {"max_tokens": 512, "tokenizer": "cl100k", "model": "openai/gpt-4o-mini"},
    }
    store.write_run(replace(sample.record("r1"), config_json=json.dumps(manifest)))
    assert json.loads(store.get_run("r1").config_json) == store.read_manifest("r1")
    stored = b"".join(p.read_bytes() for p in store.layout.root.rglob("*") if p.is_file())
    assert b"sk-live" not in stored
    assert b"hunter2" not in stored


def test_a_record_as_stored_is_what_get_run_reads_back(store: RunStore) -> None:
    # The summary step's report shows the record before it is written (the record is
    # written last): it must be the stored one, secrets masked, to the microsecond.
    store.write_manifest("r1", {})
    secret = {"adapter": {"options": {"apiKey": "sk-live-7"}}, "run": {"k": 5}}
    record = replace(
        sample.record("r1"),
        dataset="https://user:hunter3@data.example/golden.jsonl",
        config_json=json.dumps(secret),
    )
    as_stored = RunStore.stored_run(record)
    assert "sk-live" not in as_stored.config_json
    assert "hunter3" not in as_stored.dataset
    store.write_run(record)
    assert store.get_run("r1") == as_stored


def test_config_json_without_secrets_is_kept_verbatim(store: RunStore) -> None:
    store.write_manifest("r1", {})
    text = '{"run":{"k":5}}'
    store.write_run(replace(sample.record("r1"), config_json=text))
    assert store.get_run("r1").config_json == text
    with pytest.raises(ValueError, match="config_json is not valid JSON"):
        store.write_run(replace(sample.record("r1"), config_json="k=5"))


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("API-KEY", True),
        ("apiKey", True),
        ("token", True),
        ("refresh_token", True),
        ("Password", True),
        ("proxy-authorization", True),
        ("SECRET", True),
        ("aws_secret_access_key", True),
        ("max_tokens", False),
        ("tokenizer", False),
        ("keys", False),
        ("author", False),
        ("prompt_hashes", False),
    ],
)
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_redact_secrets_leaves_the_input_untouched() -> None:
    original = {"token": "t", "nested": {"k": 1}}
    assert redact_secrets(original) == {"token": REDACTED, "nested": {"k": 1}}
    assert original == {"token": "t", "nested": {"k": 1}}


def test_list_runs_orders_by_start_and_restart_hides_a_run(store: RunStore) -> None:
    t = sample.T0
    sample.write_run(store, "b-late", start=t + timedelta(hours=2))
    sample.write_run(store, "a-early", start=t)
    sample.write_run(store, "c-mid", start=t + timedelta(hours=1))
    assert [r.run_id for r in store.list_runs()] == ["a-early", "c-mid", "b-late"]
    # Re-materializing a run starts with its manifest: until it finishes again it is hidden.
    store.write_manifest("c-mid", {"attempt": 2})
    assert [r.run_id for r in store.list_runs()] == ["a-early", "b-late"]
    assert store.is_finished("c-mid") is False
    assert store.read_case_results("c-mid") == sample.RESULTS
    with store.connect() as con:
        assert con.execute("SELECT DISTINCT run_id FROM case_results ORDER BY 1").fetchall() == [
            ("a-early",),
            ("b-late",),
        ]


def test_last_completed_run_is_the_regression_baseline(store: RunStore) -> None:
    t = sample.T0
    sample.write_run(store, "r1", start=t)
    sample.write_run(store, "r2", start=t + timedelta(hours=1), status="aborted:budget")
    sample.write_run(store, "r3", start=t + timedelta(hours=2))
    sample.write_run(store, "other-adapter", start=t + timedelta(hours=3), adapter="http")
    sample.write_run(store, "other-dataset", start=t + timedelta(hours=3), dataset="b.jsonl")
    base = store.last_completed_run
    assert base("golden.jsonl", "demo").run_id == "r3"
    assert base("golden.jsonl", "demo", before_run_id="r3").run_id == "r1"
    assert base("golden.jsonl", "demo", before_run_id="r2").run_id == "r1"
    assert base("golden.jsonl", "demo", before_run_id="r1") is None
    assert base("golden.jsonl", "http").run_id == "other-adapter"
    assert base("nothing.jsonl", "demo") is None
    # A run still in progress is placed by the started_at in its manifest...
    store.write_manifest("running", {"started_at": (t + timedelta(minutes=90)).isoformat()})
    assert base("golden.jsonl", "demo", before_run_id="running").run_id == "r1"
    # ...and without one, every other completed run counts.
    store.write_manifest("running", {})
    assert base("golden.jsonl", "demo", before_run_id="running").run_id == "r3"
    with pytest.raises(RunNotFound):
        base("golden.jsonl", "demo", before_run_id="ghost")


def test_the_baseline_was_scored_with_the_same_settings(store: RunStore) -> None:
    t = sample.T0
    k5 = {"k": 5, "source_match": "chunk", "metrics": ["retrieval.mrr"]}
    sample.write_run(store, "k5", start=t, run=k5)
    sample.write_run(store, "k3", start=t + timedelta(hours=1), run={**k5, "k": 3})
    sample.write_run(
        store, "doc", start=t + timedelta(hours=2), run={**k5, "source_match": "document"}
    )
    sample.write_run(store, "more-metrics", start=t + timedelta(hours=3), run={**k5, "metrics": []})
    # Concurrency changes how a run goes, not its scores: still a baseline.
    sample.write_run(store, "k5-slow", start=t + timedelta(hours=4), run={**k5, "concurrency": 1})
    sample.write_run(store, "now", start=t + timedelta(hours=5), run=k5)

    def base(settings):
        found = store.last_completed_run(
            "golden.jsonl", "demo", before_run_id="now", run_settings=settings
        )
        return found.run_id if found else None

    assert base(k5) == "k5-slow"
    assert base({**k5, "k": 3}) == "k3"
    assert base({**k5, "source_match": "document"}) == "doc"
    assert base({**k5, "metrics": []}) == "more-metrics"
    assert base({**k5, "k": 10}) is None
    assert base(None) == "k5-slow"


def test_dataset_kind_strings_are_accepted(store: RunStore) -> None:
    store.write_manifest("r1", {})
    store.write_dataset("r1", [Case("x", "q?", "injection", adversarial_payload="p1")])
    assert store.read_dataset("r1")[0].kind == "injection"


def test_default_root_comes_from_the_environment(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPROOF_STORE", str(tmp_path / "env-store"))
    assert RunStore().layout.root == (tmp_path / "env-store").resolve()


def test_unknown_case_kinds_are_rejected_before_writing(store: RunStore) -> None:
    store.write_manifest("r1", {})
    with pytest.raises(ValueError, match="unknown case kind\\(s\\): trivia"):
        store.write_dataset("r1", [Case("x", "q?", "trivia")])
    assert not store.layout.table_path("r1", "dataset").exists()


def test_results_larger_than_one_write_batch_round_trip(tmp_path):
    from ragproof_core.model import MetricResult, Status
    from ragproof_core.store.run_store import WRITE_BATCH_ROWS, RunStore

    store = RunStore(tmp_path)
    store.write_manifest("big", {"run_id": "big"})
    results = [
        MetricResult(f"c{i}", "retrieval.mrr", Status.SCORED, (i % 7) / 7)
        if i % 3
        else MetricResult(f"c{i}", "retrieval.mrr", Status.SKIPPED, None, "why")
        for i in range(2 * WRITE_BATCH_ROWS + 1)
    ]
    store.write_case_results("big", results)
    assert store.read_case_results("big") == results


def test_graded_expected_sources_round_trip_beside_the_list_column(store: RunStore) -> None:
    """CONTRACT section 19: the grades (zeros included) are kept as JSON; the list column
    holds the relevant ids, and a list-valued case stores exactly what it always did."""
    graded = Case("g", "q?", expected_source_ids=("d1",), source_grades={"d1": 2, "d9": 0})
    listed = Case("l", "q?", expected_source_ids=("d4",))
    store.write_manifest("r1", {})
    store.write_dataset("r1", [graded, listed])
    assert store.read_dataset("r1") == [graded, listed]
    assert store.read_dataset_range("r1", 0, 1) == [graded]
    table = pq.read_table(store.layout.table_path("r1", "dataset"))
    assert table.column("expected_source_ids").to_pylist() == [["d1"], ["d4"]]
    assert table.column("expected_source_grades_json").to_pylist() == ['{"d1": 2, "d9": 0}', None]


def test_agent_fields_and_steps_round_trip(store: RunStore) -> None:
    """CONTRACT section 17: expected tools, tool_match, expected hops and the answer's
    steps come back exactly; no steps (None) and an empty trajectory (()) stay distinct."""
    agent = Case(
        "a",
        "q?",
        expected_tools=(ExpectedTool("lookup", {"order": {"id": 1.5}}), ExpectedTool("refund")),
        tool_match=ToolMatch.ANY_ORDER,
        expected_hops=(("d1",), ("d2", "d3")),
    )
    plain = Case("p", "q?")
    store.write_manifest("r1", {})
    store.write_dataset("r1", [agent, plain])
    assert store.read_dataset("r1") == [agent, plain]
    steps = (
        RetrieveStep("q", (Chunk("d1#0", "t", 0.5, {"document_id": "d1"}),)),
        ToolStep("lookup", {"order": {"id": 1.5}, "flag": True}, "found"),
        ToolStep("refund", {}),
    )
    outputs = [
        CaseOutput("a", Answer("done", steps=steps)),
        CaseOutput("p", Answer("plain")),
        CaseOutput("e", Answer("none made", steps=())),
    ]
    store.write_outputs("r1", outputs)
    assert store.read_outputs("r1") == outputs


def test_conversation_turns_round_trip_and_batches_never_cut_a_conversation(
    store: RunStore,
) -> None:
    """CONTRACT section 16: a turn keeps its conversation and number in the store, and a
    shard's batches hold whole conversations whatever the batch size."""
    cases = load_dataset(CONVERSATIONS / "mixed.jsonl")
    store.write_manifest("r1", {})
    store.write_dataset("r1", cases)
    assert store.read_dataset("r1") == cases
    batches = list(store.iter_dataset_range("r1", 0, len(cases), 2))
    assert [[c.id for c in batch] for batch in batches] == [
        ["s1"],
        ["c1#1", "c1#2", "c1#3"],
        ["c2#1"],
    ]
    assert store.dataset_unit_starts("r1") == [0, 1, 4]
    store.write_manifest("r2", {})
    store.write_dataset("r2", [Case("a", "q?"), Case("b", "q?")])
    assert store.dataset_unit_starts("r2") is None


def test_run_batches_hold_a_range_of_the_dataset_and_its_recording_aligned(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """A shard's rows of the dataset and of the stored recording, whatever the row groups
    (7 rows here) and the batch size; a conversation is never cut."""
    monkeypatch.setattr(files, "ROW_GROUP_SIZE", 7)
    cases = [Case(f"c{i:02d}", "q?") for i in range(30)]
    cases += load_dataset(CONVERSATIONS / "mixed.jsonl")
    store.write_manifest("r1", {})
    store.write_dataset("r1", cases)
    outputs = [
        CaseOutput(case.id, error=f"no recorded output for case {case.id}") for case in cases
    ]
    staged = tmp_path / "staged.parquet"
    with pq.ParquetWriter(staged, RECORDED_OUTPUTS.schema) as writer:
        for part in (outputs[:11], outputs[11:]):
            writer.write_table(encode_outputs("r1", part), row_group_size=5)
    ids = encode_outputs("r1", outputs).column("case_id")
    store.write_recorded_outputs("r1", StagedRecording(staged, ids), cases)
    assert pq.ParquetFile(store.layout.table_path("r1", "dataset")).metadata.num_row_groups == 5
    for start, end, rows in [(0, 35, 4), (3, 17, 5), (13, 14, 1), (29, 35, 2), (7, 21, 7)]:
        batches = list(store.iter_run_batches("r1", start, end, rows))
        assert [case for b in batches for case in b.cases()] == cases[start:end]
        assert [o for b in batches for o in b.recorded_outputs()] == outputs[start:end]
        assert all(b.rows <= rows or b.cases()[0].turn is not None for b in batches)
    assert [len(b) for b in store.iter_dataset_range("r1", 29, 35, 2)] == [2, 4]
    store.write_manifest("r2", {})
    store.write_dataset("r2", cases[:3])
    assert [b.recorded for b in store.iter_run_batches("r2", 0, 3, 2)] == [None, None]


def test_results_writer_writes_columns_and_encoded_outputs_as_it_writes_objects(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragproof_core.metrics.result_columns import ResultColumns
    from ragproof_core.store import run_store
    from ragproof_core.store.schema import encode_outputs

    # Slices of 3 rows: the columns are written in several row groups, as objects are.
    monkeypatch.setattr(run_store, "WRITE_BATCH_ROWS", 3)
    written = {}
    for name, outputs, results in (
        ("objects", sample.OUTPUTS, sample.RESULTS),
        (
            "columns",
            encode_outputs("another-run", sample.OUTPUTS),
            ResultColumns.from_results(sample.RESULTS),
        ),
    ):
        store = RunStore(tmp_path / name)
        store.write_manifest("r1", {"run_id": "r1"})
        with store.results_writer("r1") as writer:
            writer.write(outputs, results)
        written[name] = [
            pq.ParquetFile(store.layout.table_path("r1", table)) for table in SHARDED_TABLES
        ]
        assert store.read_case_results("r1") == sample.RESULTS
        assert store.read_outputs("r1") == sample.OUTPUTS
    for by_objects, by_columns in zip(written["objects"], written["columns"], strict=True):
        assert by_columns.read().equals(by_objects.read())
        assert by_columns.schema_arrow.equals(by_objects.schema_arrow, check_metadata=True)
        assert by_columns.metadata.num_row_groups == by_objects.metadata.num_row_groups > 1


def _recorded_run(store: RunStore, run_id: str, tmp_path: Path) -> tuple[list, list]:
    """A run of 9 cases beside its stored recording (retrieved chunks, two failures)."""
    cases = [Case(f"c{i}", "q?", expected_source_ids=(f"d{i}",)) for i in range(9)]
    outputs = [
        CaseOutput(case.id, error="down")
        if i in (2, 5)
        else CaseOutput(
            case.id,
            answer=Answer(f"answer {i}"),
            retrieved=(Chunk(f"d{i}", "a long chunk text", 0.5, {"document_id": "doc"}),),
        )
        for i, case in enumerate(cases)
    ]
    store.write_manifest(run_id, {"run_id": run_id})
    store.write_dataset(run_id, cases)
    staged = tmp_path / f"{run_id}.parquet"
    table = encode_outputs(run_id, outputs)
    pq.write_table(table, staged)
    store.write_recorded_outputs(run_id, StagedRecording(staged, table.column("case_id")), cases)
    return cases, outputs


def test_run_batches_read_only_the_columns_asked_and_the_rest_when_asked_whole(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setattr(files, "ROW_GROUP_SIZE", 4)
    cases, outputs = _recorded_run(store, "r1", tmp_path)
    columns = ("id", "expected_source_ids", "case_id", "error", "retrieved.id", "absent")
    batches = list(store.iter_run_batches("r1", 1, 8, 3, columns=columns))
    assert [b.rows for b in batches] == [3, 3, 1]
    for batch in batches:
        assert batch.dataset.column_names == ["id", "expected_source_ids"]
        assert batch.recorded.column_names == ["case_id", "retrieved", "error"]
        chunk = batch.recorded.schema.field("retrieved").type.value_type
        assert [chunk.field(i).name for i in range(chunk.num_fields)] == ["id"]
    assert [i for b in batches for i in b.dataset.column("id").to_pylist()] == [
        c.id for c in cases[1:8]
    ]
    assert [i for b in batches for i in b.recorded.column("error").to_pylist()] == [
        o.error for o in outputs[1:8]
    ]
    whole = list(store.iter_run_batches("r1", 1, 8, 3))
    for projected, full in zip(batches, whole, strict=True):
        dataset, recorded = projected.whole()
        assert dataset.equals(full.dataset) and recorded.equals(full.recorded)
    # Objects come from the whole rows, whatever columns the batch holds.
    assert [c for b in batches for c in b.cases()] == cases[1:8]
    assert [o for b in batches for o in b.recorded_outputs()] == outputs[1:8]


def test_a_recording_becomes_the_outputs_table_when_the_shards_write_results_alone(
    store: RunStore, tmp_path
) -> None:
    cases, outputs = _recorded_run(store, "r1", tmp_path)
    results = [scored(case.id, "retrieval.mrr", 1.0) for case in cases]
    for shard, part in enumerate((results[:4], results[4:])):
        with store.results_writer("r1", shard, outputs=False) as writer:
            writer.write(encode_outputs("r1", outputs).slice(0, 1), part)
    assert store.table_parts("r1", "outputs") == []
    store.outputs_from_recording("r1")
    assert store.read_outputs("r1") == outputs
    assert store.read_case_results("r1") == results
    [part] = store.table_parts("r1", "outputs")
    recording = store.layout.table_path("r1", "recorded_outputs")
    assert Path(part).samefile(recording)  # linked on local disk, not written again
    # A run started again replaces the link with its own recording's.
    store.outputs_from_recording("r1")
    assert store.read_outputs("r1") == outputs
