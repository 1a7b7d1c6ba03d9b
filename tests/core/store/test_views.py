from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.model import case_error, scored, skipped
from ragproof_core.store import views
from ragproof_core.store.run_store import RunStore
from tests.core.store import sample

CONVERSATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "conversations"

# CONTRACT section 6, in order; extras may only follow.
CONTRACT_RUNS = [
    "run_id",
    "dataset",
    "adapter",
    "status",
    "started_at",
    "finished_at",
    "judge_model",
    "prompt_hashes",
    "config_json",
    "cost_usd",
]
CONTRACT_CASE_RESULTS = [
    "run_id",
    "case_id",
    "metric",
    "status",
    "value",
    "reason",
    "judge_raw_json",
]
# CONTRACT section 25: what the pipeline said.
CONTRACT_OUTPUTS = [
    "run_id",
    "case_id",
    "answer",
    "retrieved_ids",
    "citations",
    "latency_s",
    "error",
]
CONTRACT_METRIC_SUMMARIES = [
    "run_id",
    "metric",
    "mean",
    "p50",
    "p95",
    "scored",
    "skipped",
    "errored",
    "not_applicable",
    "judge_errors",
]


def columns(con: duckdb.DuckDBPyConnection, view: str) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in con.execute(f"DESCRIBE {view}").fetchall()]


def assert_contract_columns(con: duckdb.DuckDBPyConnection) -> None:
    runs = columns(con, "runs")
    assert [name for name, _ in runs] == [
        *CONTRACT_RUNS,
        "cases",
        "case_failures",
        "judge_requests",
        "cache_hits",
        "judge_mode",
        "judge_repairs",
        "judge_errors",
        "judge_input_tokens",
        "judge_output_tokens",
        "judge_usage_json",
        "judge_agreement_json",
        # CONTRACT section 24: judge failures named, the reply format asked for, the
        # adapter's calls by method.
        "judge_first_error",
        "judge_response_format",
        "adapter_calls_json",
        "name",
        "tags",
        "config_digest",
        "secrets_masked",
        # CONTRACT section 29: the file a damaged run was found with.
        "damaged_file",
    ]
    assert dict(runs)["started_at"] == "TIMESTAMP WITH TIME ZONE"
    assert dict(runs)["prompt_hashes"] == "VARCHAR"
    assert dict(runs)["cost_usd"] == "DOUBLE"
    # CONTRACT section 27: each row's trial follows.
    assert [name for name, _ in columns(con, "case_results")] == [*CONTRACT_CASE_RESULTS, "trial"]
    assert dict(columns(con, "case_results"))["value"] == "DOUBLE"
    summaries = [name for name, _ in columns(con, "metric_summaries")]
    assert summaries[: len(CONTRACT_METRIC_SUMMARIES)] == CONTRACT_METRIC_SUMMARIES
    outputs = columns(con, "outputs")
    assert [name for name, _ in outputs][:7] == CONTRACT_OUTPUTS
    assert dict(outputs)["retrieved_ids"] == "VARCHAR[]"


def test_views_have_contract_columns_on_an_empty_store(store: RunStore) -> None:
    assert store.ensure_views() is True
    with store.connect() as con:
        assert_contract_columns(con)
        for view in views.RUN_VIEWS:
            assert con.execute(f"SELECT count(*) FROM {view}").fetchone() == (0,)


def test_views_show_finished_runs_with_contract_columns(store: RunStore) -> None:
    sample.write_run(store, "r1")
    with store.connect() as con:
        assert_contract_columns(con)
        con.execute("SET TimeZone = 'UTC'")
        assert con.execute("SELECT * FROM runs").fetchall() == [
            (
                "r1",
                "golden.jsonl",
                "demo",
                "completed",
                sample.T0,
                sample.record("r1").finished_at,
                "openai/gpt-4o-mini",
                '{"groundedness": "' + "a" * 64 + '", "refusal": "' + "b" * 64 + '"}',
                '{"run": {"k": 5, "source_match": "chunk"}}',
                0.0123,
                4,
                1,
                7,
                3,
                None,
                0,
                0,
                0,
                0,
                "[]",
                "{}",
                None,
                None,
                "{}",
                None,
                "{}",
                None,
                0,
                None,
            )
        ]
        assert con.execute("SELECT prompt_hashes::JSON->>'refusal' FROM runs").fetchone() == (
            "b" * 64,
        )
        rows = con.execute(
            "SELECT case_id, metric, status, value, reason, judge_raw_json FROM case_results "
            "ORDER BY case_id, metric"
        ).fetchall()
        expected = sorted(
            (r.case_id, r.metric, str(r.status), r.value, r.reason, r.judge_raw_json)
            for r in sample.RESULTS
        )
        assert rows == expected
        assert con.execute(
            "SELECT count(*) FROM case_results WHERE (status = 'scored') <> (value IS NOT NULL)"
        ).fetchone() == (0,)
        listed = ", ".join(CONTRACT_METRIC_SUMMARIES)
        assert con.execute(f"SELECT {listed} FROM metric_summaries ORDER BY metric").fetchall() == [
            ("r1", "generation.groundedness", None, None, None, 0, 1, 2, 1, 1),
            ("r1", "retrieval.precision_at_k", 0.4, 0.5, 1.0, 2, 1, 1, 0, 0),
        ]


def test_a_run_without_its_run_record_is_listed_running_and_its_rows_invisible(
    store: RunStore,
) -> None:
    """CONTRACT section 29: a started run is listed (running while its heartbeat is fresh,
    interrupted after); its rows show only once it has finished."""
    sample.write_run(store, "done")
    sample.write_run(store, "killed", finish=False)
    with store.connect() as con:
        listed = con.execute("SELECT run_id, status FROM runs ORDER BY run_id").fetchall()
        # Running: its heartbeat is fresh (interrupted once 15 s old, on a slow machine).
        assert listed[0] == ("done", "completed")
        assert listed[1] in (("killed", "running"), ("killed", "interrupted"))
        for view in ("case_results", "metric_summaries"):
            assert con.execute(f"SELECT DISTINCT run_id FROM {view}").fetchall() == [("done",)]
    assert [r.run_id for r in store.list_runs()] == ["done"]
    # its files stay readable for the pipeline that may resume it
    assert store.read_case_results("killed") == sample.RESULTS


def test_ensure_views_on_an_up_to_date_store_never_opens_the_db_for_writing(
    store: RunStore, spawn
) -> None:
    assert store.ensure_views() is True
    db = store.layout.duckdb_path
    before = (db.stat().st_mtime_ns, db.stat().st_size)
    # A read-only holder makes any write open fail with a lock error (StoreLocked
    # after the short timeout); ensure_views must succeed regardless.
    holder = spawn("hold", str(store.layout.root), "ro")
    holder.expect("holding")
    assert store.ensure_views(timeout_s=0.5) is False
    with store.connect(timeout_s=0.5) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    with pytest.raises(views.StoreLocked, match="stayed locked"):
        views.open_db(store.layout, read_only=False, timeout_s=0.3)
    holder.proceed()
    holder.finish()
    assert (db.stat().st_mtime_ns, db.stat().st_size) == before
    assert not Path(f"{db}.wal").exists()


def test_view_creation_waits_then_reports_a_writer_that_keeps_the_lock(
    store: RunStore, spawn
) -> None:
    store.layout.root.mkdir(parents=True)
    holder = spawn("hold", str(store.layout.root), "rw")
    holder.expect("holding")
    with pytest.raises(views.StoreLocked, match="duckdb -readonly"):
        store.ensure_views(timeout_s=0.3)
    holder.proceed()
    holder.finish()
    assert store.ensure_views() is True


def test_moved_store_recreates_views_pointing_at_the_new_place(tmp_path: Path) -> None:
    old = RunStore(tmp_path / "old")
    sample.write_run(old, "r1")
    old.ensure_views()
    shutil.copytree(old.layout.root, tmp_path / "new")
    shutil.rmtree(old.layout.root)
    moved = RunStore(tmp_path / "new")
    assert moved.ensure_views() is True
    assert moved.ensure_views() is False
    with moved.connect() as con:
        assert con.execute("SELECT store_root, view_version FROM ragproof_meta").fetchone() == (
            str(moved.layout.root),
            views.VIEW_VERSION,
        )
        assert con.execute("SELECT run_id FROM runs").fetchall() == [("r1",)]
        assert con.execute("SELECT count(*) FROM case_results").fetchone() == (len(sample.RESULTS),)


def test_views_read_runs_written_before_columns_were_added(store: RunStore) -> None:
    sample.write_run(store, "new")
    store.write_manifest("old", {})
    old_run = pa.Table.from_pylist(
        [
            {
                k: v
                for k, v in sample.record("old").__dict__.items()
                # columns added later
                if k
                not in (
                    "judge_usage",
                    "judge_agreement",
                    "judge_first_error",
                    "judge_response_format",
                    "adapter_calls",
                    "name",
                    "tags",
                    "config_digest",
                    "secrets_masked",
                )
            }
            | {
                "prompt_hashes": "{}",
                "started_at": sample.T0.replace(hour=1),
            }
        ]
    ).drop_columns(["cases", "case_failures", "judge_requests", "cache_hits"])
    pq.write_table(old_run, store.layout.table_path("old", "run"))
    pq.write_table(
        pa.table(
            {
                "run_id": ["old"],
                "case_id": ["c1"],
                "metric": ["retrieval.mrr"],
                "status": ["scored"],
                "value": [1.0],
                "reason": [None],
            }
        ),
        store.layout.table_path("old", "case_results"),
    )
    # A store from before the catalog is catalogued from its run folders (views.ensure_catalog).
    store.catalog.register_finished("old")
    with store.connect() as con:
        assert con.execute(
            "SELECT run_id, cases, cache_hits FROM runs ORDER BY started_at"
        ).fetchall() == [("old", None, None), ("new", 4, 3)]
        assert con.execute(
            "SELECT case_id, judge_raw_json FROM case_results WHERE run_id = 'old'"
        ).fetchall() == [("c1", None)]
    assert store.get_run("old").cache_hits == 0
    assert [r.judge_raw_json for r in store.read_case_results("old")] == [None]


def test_an_empty_database_file_is_reported_not_silently_replaced(store: RunStore) -> None:
    store.layout.root.mkdir(parents=True)
    store.layout.duckdb_path.write_bytes(b"")
    with pytest.raises(views.StoreCorrupt, match="delete it and it will be recreated"):
        store.ensure_views(timeout_s=0.2)
    store.layout.duckdb_path.unlink()
    assert store.ensure_views() is True


def test_reading_views_never_waits_for_a_run_being_written(store: RunStore, spawn) -> None:
    sample.write_run(store, "done")
    store.ensure_views()
    writer = spawn("mid-write", str(store.layout.root), "busy", str(20_000 * len(METRIC_NAMES)))
    writer.expect("mid ")
    # The writer is inside its case_results file right now; the reader completes anyway.
    with store.connect(timeout_s=0.5) as con:
        assert con.execute("SELECT run_id FROM runs WHERE status = 'completed'").fetchall() == [
            ("done",)
        ]
        assert con.execute("SELECT count(*) FROM case_results").fetchone() == (len(sample.RESULTS),)
    writer.proceed()
    writer.expect("done")
    writer.finish()
    with store.connect() as con:
        assert con.execute(
            "SELECT count(*) FROM case_results WHERE run_id = 'busy'"
        ).fetchone() == (20_000 * len(METRIC_NAMES),)


def test_two_processes_writing_runs_at_once_both_become_visible(tmp_path: Path, spawn) -> None:
    root = tmp_path / "store"
    go = tmp_path / "go"
    workers = [spawn("write-run", str(root), run_id, "3000", str(go)) for run_id in ("a", "b")]
    for worker in workers:
        worker.expect("waiting")
    go.touch()
    for worker in workers:
        worker.expect("done")
        worker.finish()
    with RunStore(root).connect() as con:
        assert con.execute("SELECT run_id, cases FROM runs ORDER BY run_id").fetchall() == [
            ("a", 3000),
            ("b", 3000),
        ]
        assert con.execute(
            "SELECT run_id, count(*), count(DISTINCT case_id) FROM case_results "
            "GROUP BY run_id ORDER BY run_id"
        ).fetchall() == [
            ("a", 3000 * len(METRIC_NAMES), 3000),
            ("b", 3000 * len(METRIC_NAMES), 3000),
        ]
        assert con.execute(
            "SELECT run_id, count(*) FROM metric_summaries GROUP BY run_id ORDER BY run_id"
        ).fetchall() == [("a", len(sample.SUMMARIES)), ("b", len(sample.SUMMARIES))]
    assert sorted(os.listdir(root / "runs")) == ["_schema", "a", "b"]


def test_lost_schema_files_are_restored_without_a_database_write(store: RunStore) -> None:
    store.ensure_views()
    db = store.layout.duckdb_path
    before = db.stat().st_mtime_ns
    shutil.rmtree(store.layout.schema_dir)
    assert store.ensure_views() is False
    assert sorted(p.name for p in store.layout.schema_dir.iterdir()) == [
        "case_results.parquet",
        "dataset.parquet",
        "metric_summaries.parquet",
        "outputs.parquet",
        "run.parquet",
    ]
    assert db.stat().st_mtime_ns == before
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_the_conversations_view_has_a_row_per_conversation_and_turn_metric(
    store: RunStore,
) -> None:
    """CONTRACT section 16: turns_scored and the mean of a conversation's scored turns;
    single cases and a conversation's own metric (under its id) are not turns."""
    cases = load_dataset(CONVERSATIONS / "mixed.jsonl")
    sample.write_run(store, "r1", finish=False)
    store.write_dataset("r1", cases)
    recall = "retrieval.recall_at_k"
    store.write_case_results(
        "r1",
        [
            scored("s1", recall, 1.0),
            scored("c1#1", recall, 1.0),
            scored("c1#2", recall, 0.0),
            skipped("c1#3", recall, "case has no expected_source_ids"),
            case_error("c2#1", recall, "boom"),
            scored("c1", "conversation.knowledge_retention", 0.5),
        ],
    )
    store.write_run(sample.record("r1"))
    with store.connect() as con:
        assert con.execute("SELECT * FROM conversations").fetchall() == [
            ("r1", "c1", recall, 2, 0.5),
            ("r1", "c2", recall, 0, None),
        ]


def test_the_outputs_view_has_what_the_pipeline_said_for_each_case(store: RunStore) -> None:
    sample.write_run(store, "r1")
    sample.write_run(store, "unfinished", finish=False)
    with store.connect() as con:
        rows = con.execute(
            "SELECT run_id, case_id, answer, retrieved_ids, citations, latency_s, error, "
            "retrieved_scores FROM outputs ORDER BY case_id"
        ).fetchall()
    assert rows == [
        (
            "r1",
            "c1",
            "Frank Herbert [doc-1#0].",
            ["doc-1#0", "doc-2#4", "doc-9#1"],
            ["doc-1#0"],
            1.25,
            None,
            [0.91, None, 0.0],
        ),
        ("r1", "c2", "I don't know.", [], None, 0.5, None, []),
        ("r1", "c3", "", None, [], 0.0, None, None),
        ("r1", "c4", None, None, None, 60.0, "TimeoutError: adapter took longer than 60s", None),
    ]


def test_no_connection_draws_a_progress_bar(local_or_s3_store: RunStore) -> None:
    # Issue 39, item 6: DuckDB's bar (on a query past two seconds) printed to stdout.
    layout = local_or_s3_store.layout
    setting = "SELECT current_setting('enable_progress_bar')"
    connections = [views.connect_confined(layout), local_or_s3_store.connect()]
    if layout.is_remote:
        connections.append(views.connect_remote(layout))
    for con in connections:
        try:
            assert con.execute(setting).fetchone() == (False,)
        finally:
            con.close()
