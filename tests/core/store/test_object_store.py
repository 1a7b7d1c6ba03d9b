"""The run store on an object store, through fsspec's in-memory filesystem (the same
code paths as S3, which tests/assets/test_s3_store.py covers against moto)."""

from __future__ import annotations

import secrets
from pathlib import PurePosixPath

import pyarrow.parquet as pq
import pytest

from ragproof_core.store.layout import StoreLayout
from ragproof_core.store.remote import StoreLocationError, split_url
from ragproof_core.store.run_store import RunStore
from tests.core.store.sample import CASES, RESULTS, write_run


def _url() -> str:
    return f"memory://bucket-{secrets.token_hex(4)}/prefix"


def test_urls_and_paths() -> None:
    assert split_url("s3://bucket/team/store/") == ("s3", "bucket/team/store")
    assert split_url("data/store") is None
    assert split_url("file:///srv/store") is None
    with pytest.raises(StoreLocationError, match="unsupported protocol 'ftp'"):
        split_url("ftp://host/x")
    with pytest.raises(StoreLocationError, match="name a bucket"):
        split_url("s3://")


def test_remote_layout_paths_and_view_globs() -> None:
    layout = StoreLayout(PurePosixPath("bucket/store"), fs=object(), protocol="s3")
    assert layout.location == "s3://bucket/store"
    assert layout.table_path("r1", "run") == PurePosixPath("bucket/store/runs/r1/run.parquet")
    assert layout.shard_table_path("r1", "case_results", 3) == PurePosixPath(
        "bucket/store/runs/r1/case_results-shard-0003.parquet"
    )
    assert layout.table_glob("case_results") == "s3://bucket/store/runs/*/case_results*.parquet"
    assert layout.judge_cache_path.root == "bucket/store/judge_cache/segments"


def test_a_failed_write_publishes_nothing_on_s3(s3_store: str) -> None:
    # On S3 (moto's server) an aborted upload never becomes an object. (fsspec's memory
    # filesystem publishes a file as soon as it is opened, so it cannot show this.)
    store = RunStore(s3_store)
    store.write_manifest("r1", {"run_id": "r1"})
    with pytest.raises(RuntimeError, match="adapter blew up"), store.results_writer("r1") as w:
        w.write([], [])
        raise RuntimeError("adapter blew up")
    names = [PurePosixPath(p).name for p in store.layout.fs.find(str(store.layout.run_dir("r1")))]
    assert names == ["manifest.json"]
    assert store.table_parts("r1", "case_results") == []


def test_a_finished_run_reads_back_and_shows_in_the_views() -> None:
    store = RunStore(_url())
    write_run(store, "r1")
    write_run(store, "r2", finish=False)  # killed before its run record: listed, no rows
    assert [r.run_id for r in store.list_runs()] == ["r1"]
    assert store.read_dataset("r1") == CASES
    assert store.read_case_results("r1") == RESULTS
    assert list(store.iter_case_results("r1", batch_rows=2)) == RESULTS
    with store.connect() as con:
        listed = con.execute("select run_id, status from runs").fetchall()
        assert listed[0] == ("r1", "completed")
        assert listed[1] in (("r2", "running"), ("r2", "interrupted"))
        assert con.execute("select count(*) from case_results").fetchone() == (len(RESULTS),)
        assert con.execute("select count(*) from metrics").fetchone()[0] >= 13


@pytest.mark.parametrize("on_s3", [False, True], ids=["memory", "s3"])
def test_a_recording_becomes_the_outputs_table_by_the_object_stores_own_copy(
    request, tmp_path, on_s3: bool
) -> None:
    from ragproof_core.store.recording import StagedRecording
    from ragproof_core.store.schema import encode_outputs
    from tests.core.store.sample import OUTPUTS

    store = RunStore(request.getfixturevalue("s3_store") if on_s3 else _url())
    store.write_manifest("r1", {"run_id": "r1"})
    store.write_dataset("r1", CASES)
    staged = tmp_path / "staged.parquet"
    table = encode_outputs("r1", OUTPUTS)
    pq.write_table(table, staged)
    store.write_recorded_outputs("r1", StagedRecording(staged, table.column("case_id")), CASES)
    with store.results_writer("r1", 0, outputs=False) as writer:
        writer.write(table, RESULTS)
    assert store.table_parts("r1", "outputs") == []
    store.outputs_from_recording("r1")
    assert store.read_outputs("r1") == OUTPUTS
    assert store.read_case_results("r1") == RESULTS
    assert [PurePosixPath(p).name for p in store.table_parts("r1", "outputs")] == [
        "outputs.parquet"
    ]
