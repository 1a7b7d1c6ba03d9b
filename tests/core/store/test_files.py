from __future__ import annotations

import fnmatch
import json
import os
import signal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_core.store import files
from ragproof_core.store.run_store import RunStore
from tests.core.store import sample


def test_write_parquet_replaces_the_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "run" / "t.parquet"
    files.write_parquet(target, pa.table({"a": [1, 2]}))
    files.write_parquet(target, pa.table({"a": [3]}))
    assert pq.read_table(target).to_pydict() == {"a": [3]}
    assert os.listdir(target.parent) == ["t.parquet"]


def test_failed_write_keeps_the_old_file_and_removes_the_temp(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    files.write_json(target, {"v": 1})
    with pytest.raises(RuntimeError, match="disk on fire"), files.atomic_path(target) as tmp:
        tmp.write_text("half a fi", encoding="utf-8")
        raise RuntimeError("disk on fire")
    assert json.loads(target.read_text(encoding="utf-8")) == {"v": 1}
    assert os.listdir(tmp_path) == ["manifest.json"]


def test_temp_names_never_match_the_view_globs(tmp_path: Path) -> None:
    tmp = files.temp_path_for(tmp_path / "case_results.parquet")
    assert tmp.name.startswith(f".case_results.parquet.tmp-{os.getpid()}-")
    assert files.is_temp_name(tmp.name)
    assert not fnmatch.fnmatch(tmp.name, "case_results.parquet")
    assert not fnmatch.fnmatch(tmp.name, "*.parquet")


def test_remove_reports_whether_the_file_existed(tmp_path: Path) -> None:
    target = tmp_path / "run.parquet"
    target.write_bytes(b"x")
    assert files.remove(target) is True
    assert files.remove(target) is False


def test_writer_killed_mid_file_leaves_nothing_visible_and_the_store_usable(
    store: RunStore, spawn
) -> None:
    sample.write_run(store, "finished")
    store.ensure_views()
    worker = spawn("mid-write", str(store.layout.root), "killed", "260000")
    tmp = Path(worker.expect("mid ").split(" ", 1)[1])
    assert tmp.exists()
    os.kill(worker.proc.pid, signal.SIGKILL)
    worker.proc.wait()

    run_dir = store.layout.run_dir("killed")
    assert sorted(os.listdir(run_dir)) == sorted(["manifest.json", "dataset.parquet", tmp.name])
    with store.connect() as con:
        # Listed as started (running until its heartbeat is 15 s old), with no rows.
        listed = con.execute("SELECT run_id, status FROM runs ORDER BY run_id").fetchall()
        assert listed in (
            [("finished", "completed"), ("killed", "running")],
            [("finished", "completed"), ("killed", "interrupted")],
        )
        assert con.execute(
            "SELECT run_id, count(*) FROM case_results GROUP BY run_id"
        ).fetchall() == [("finished", len(sample.RESULTS))]
        assert con.execute("SELECT DISTINCT run_id FROM metric_summaries").fetchall() == [
            ("finished",)
        ]
    with pytest.raises(FileNotFoundError, match="has no case_results table yet"):
        store.read_case_results("killed")

    # The killed run can be redone under its id, and new runs work as before.
    sample.write_run(store, "killed", start=sample.T0.replace(hour=23))
    sample.write_run(store, "later", start=sample.T0.replace(hour=23, minute=59))
    assert store.read_case_results("killed") == sample.RESULTS
    with store.connect() as con:
        assert con.execute(
            "SELECT run_id, count(*) FROM case_results GROUP BY run_id ORDER BY run_id"
        ).fetchall() == [(r, len(sample.RESULTS)) for r in ("finished", "killed", "later")]
