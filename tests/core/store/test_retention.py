"""Retention (CONTRACT section 31): `collect_garbage`, what `ragproof gc` and a suite's
`keep_last` run."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pyarrow.parquet as pq
import pytest

from ragproof_core.store import Retention, RunStore, collect_garbage, tables
from ragproof_core.store.query import run_read_only
from tests.core.store import sample


@pytest.fixture
def store(tmp_path) -> RunStore:
    store = RunStore(tmp_path / "store")
    for index in range(5):
        start = sample.T0 + timedelta(days=index)
        sample.write_run(store, f"r{index}", finish=False)
        store.write_run(replace(sample.record(f"r{index}"), started_at=start))
    return store


def listed(store: RunStore) -> list[str]:
    return [row[0] for row in run_read_only(store.layout, "SELECT run_id FROM runs").rows]


def test_keep_last_removes_the_older_runs_from_the_store_and_forgets_them(store) -> None:
    forgotten: list[str] = []
    report = collect_garbage(store, Retention(keep_last=2), forget=forgotten.append)
    assert [r.run_id for r in report.removed] == ["r0", "r1", "r2"]
    assert forgotten == ["r0", "r1", "r2"]
    assert report.bytes_freed > 0 and report.kept == []
    assert listed(store) == ["r3", "r4"]
    assert not store.layout.run_dir("r0").exists()


def test_a_dry_run_removes_nothing_and_says_what_would_go(store) -> None:
    report = collect_garbage(
        store,
        Retention(older_than_days=2),
        dry_run=True,
        now=sample.T0 + timedelta(days=3, hours=1),
    )
    assert [r.run_id for r in report.removed] == ["r0", "r1"]
    assert report.dry_run and report.bytes_freed > 0
    assert listed(store) == ["r0", "r1", "r2", "r3", "r4"]


def test_labelled_and_running_runs_are_kept_and_listed_unless_forced(store) -> None:
    folder = store.layout.record_dir("r0", "labels")
    folder.mkdir(parents=True)
    pq.write_table(tables.LABELS.schema.empty_table(), folder / "x.parquet")
    sample.write_run(store, "busy", finish=False)  # running: its heartbeat is fresh
    report = collect_garbage(store, Retention(keep_last=0))
    assert {(r.run_id, r.kept_because) for r in report.kept} == {
        ("r0", "it has labels"),
        ("busy", "it is running"),
    }
    assert listed(store) == ["r0", "busy"]
    forced = collect_garbage(store, Retention(keep_last=0), force=True)
    assert [r.run_id for r in forced.removed] == ["r0"]
    assert [r.run_id for r in forced.kept] == ["busy"]


def test_a_policy_takes_exactly_one_of_keep_last_and_older_than() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Retention()
    with pytest.raises(ValueError, match="exactly one"):
        Retention(keep_last=1, older_than_days=2)
