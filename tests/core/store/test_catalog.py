"""The store's catalog (CONTRACT sections 29 and 31): every view reads it, compaction
keeps it small, a damaged run is found on read and left out by name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from ragproof_core.calibration.probe import ProbeResult, ProbeRow
from ragproof_core.store import RunDamaged, RunStore, damage, new_label, views
from ragproof_core.store.catalog import COMPACT_EVERY, Catalog, new_entry, open_entry_row
from ragproof_core.store.catalog_views import RUN_STATES_VIEW
from ragproof_core.store.query import run_read_only
from tests.core.store import sample

RESULT_ROWS = len(sample.RESULTS)


def sql(store: RunStore, query: str) -> list[tuple]:
    return run_read_only(store.layout, query).rows


@pytest.fixture(scope="module")
def compacted(tmp_path_factory) -> RunStore:
    """More runs than one compaction folds: some in parts, the rest in the log."""
    store = RunStore(tmp_path_factory.mktemp("catalog") / "store")
    for index in range(COMPACT_EVERY + 3):
        sample.write_run(store, f"r{index:02d}")
    return store


def copy_of(store: RunStore, tmp_path: Path) -> RunStore:
    """A copy keeping the hard links between run files and the catalog's log."""
    target = tmp_path / "store"
    subprocess.run(["cp", "-a", str(store.layout.root), str(target)], check=True)
    return RunStore(target)


def test_compaction_folds_the_log_into_parts_and_the_views_read_both(compacted) -> None:
    catalog = compacted.catalog
    snapshot = catalog.snapshot()
    assert snapshot.seq == 1
    assert [p.rows for p in snapshot.table_parts("runs")] == [COMPACT_EVERY]
    assert catalog.pending() == 3
    runs = COMPACT_EVERY + 3
    assert sql(compacted, "SELECT count(*), count(DISTINCT run_id) FROM runs") == [(runs, runs)]
    assert sql(compacted, "SELECT count(*) FROM case_results") == [(runs * RESULT_ROWS,)]
    assert sql(compacted, "SELECT count(DISTINCT run_id) FROM metric_summaries") == [(runs,)]
    with compacted.connect() as con:  # the views file: parts named, log globbed
        assert con.execute("SELECT count(*) FROM case_results").fetchone() == (runs * RESULT_ROWS,)
    assert [r.run_id for r in compacted.list_runs()] == [f"r{i:02d}" for i in range(runs)]


def test_a_second_compaction_retires_what_the_first_folded(compacted, tmp_path) -> None:
    store = copy_of(compacted, tmp_path)
    first = store.catalog.snapshot()
    for index in range(COMPACT_EVERY):
        sample.write_run(store, f"s{index:02d}")
    second = store.catalog.snapshot()
    assert second.seq == 2
    logged = {p.name.split("~")[0] for p in store.catalog.log_files("runs")}
    # The first compaction's log files are gone; none of the second's needs reading.
    assert not logged & {key.split("~")[0] for key in first.folded_now}
    total = 2 * COMPACT_EVERY + 3
    assert sql(store, "SELECT count(*) FROM runs") == [(total,)]
    assert sql(store, "SELECT count(*) FROM case_results") == [(total * RESULT_ROWS,)]
    # A third compaction: only the parts of the last two snapshots stay on disk (none of
    # the first's, none written and merged at once).
    for index in range(COMPACT_EVERY):
        sample.write_run(store, f"t{index:02d}")
    third = store.catalog.snapshot()
    assert third.seq == 3
    named = {(t, p.name) for snap in (second, third) for t, ps in snap.parts.items() for p in ps}
    parts = store.layout.catalog_dir / "parts"
    assert {(f.parent.name, f.stem) for f in parts.glob("*/*.parquet")} == named


def test_a_restarted_run_shows_only_its_latest_attempts_rows(tmp_path) -> None:
    store = RunStore(tmp_path / "store")
    sample.write_run(store, "again")
    store.write_manifest("again", {"run_id": "again"})  # restarted: listed running, no rows
    assert sql(store, "SELECT status FROM runs") in ([("running",)], [("interrupted",)])
    assert sql(store, "SELECT count(*) FROM case_results") == [(0,)]
    store.write_case_results("again", sample.RESULTS[:3])
    store.write_summaries("again", sample.SUMMARIES)
    store.write_run(sample.record("again"))
    assert sql(store, "SELECT status FROM runs") == [("completed",)]
    assert sql(store, "SELECT count(*) FROM case_results") == [(3,)]
    store.catalog.compact(min_entries=0, merge_all=True)
    assert sql(store, "SELECT count(*) FROM case_results") == [(3,)]


def test_a_truncated_file_is_found_on_read_and_its_run_left_out(compacted, tmp_path) -> None:
    store = copy_of(compacted, tmp_path)
    victim = "r18"  # still in the log: its case_results link is the file truncated
    path = store.layout.table_path(victim, "case_results")
    os.truncate(path, 10)
    runs = COMPACT_EVERY + 3
    assert sql(store, "SELECT count(*) FROM case_results") == [((runs - 1) * RESULT_ROWS,)]
    assert sql(
        store, "SELECT run_id, status, damaged_file FROM runs WHERE status <> 'completed'"
    ) == [(victim, "damaged", f"runs/{victim}/case_results.parquet")]
    assert [r.run_id for r in store.damaged_runs()] == [victim]
    assert victim not in [r.run_id for r in store.list_runs()]
    with pytest.raises(RunDamaged, match=f"run '{victim}' is damaged"):
        store.require_intact(victim)
    # Compaction skips nothing else and keeps the run out.
    store.catalog.compact(min_entries=0, merge_all=True)
    assert sql(store, "SELECT count(*) FROM case_results") == [((runs - 1) * RESULT_ROWS,)]
    assert sql(store, "SELECT status FROM runs WHERE run_id = ?".replace("?", f"'{victim}'")) == [
        ("damaged",)
    ]


def test_a_compacted_runs_deleted_file_is_found_when_the_run_is_named_or_listed(
    compacted, tmp_path
) -> None:
    store = copy_of(compacted, tmp_path)
    victim = "r03"  # compacted: the views read its rows from the parts
    os.remove(store.layout.table_path(victim, "outputs"))
    with pytest.raises(RunDamaged, match="outputs.parquet: missing"):
        store.require_intact(victim)
    listed = store.check_listed(store.catalog_records("true"))
    assert [(r.run_id, r.damaged_file) for r in listed if r.status == "damaged"] == [
        (victim, f"runs/{victim}/outputs.parquet")
    ]
    assert sql(store, "SELECT count(DISTINCT run_id) FROM metric_summaries") == [
        (COMPACT_EVERY + 2,)
    ]


def test_labels_and_probes_are_read_through_the_catalog_and_left_out_with_a_damaged_run(
    tmp_path,
) -> None:
    """Records join the log as written, compaction folds them into parts, no view globs a
    run folder; a run found damaged after compaction takes its records out of the views."""
    store = RunStore(tmp_path / "store")
    for run_id in ("r0", "r1", "r2"):
        sample.write_run(store, run_id)
    metric, t0 = "generation.groundedness", datetime(2026, 12, 2, 9, tzinfo=UTC)
    for run_id in ("r0", "r1"):
        store.write_label(new_label(run_id, "c1", metric, 1.0, "ann", now=t0))
    store.write_label(new_label("r0", "c1", metric, 0.0, "ann", now=t0 + timedelta(hours=1)))
    probe = ProbeResult("r1", "openai/judge", 10, 4, (ProbeRow(metric, "position", 8, 2, 0),))
    store.write_probe(probe, now=t0)
    labels = "SELECT run_id, case_id, score FROM labels ORDER BY run_id"
    probes = "SELECT run_id, cases, changed FROM probes"
    assert sql(store, labels) == [("r0", "c1", 0.0), ("r1", "c1", 1.0)]  # r0's mind changed
    assert len(store.catalog.log_files("labels")) == 3
    store.catalog.compact(min_entries=0, merge_all=True)
    assert [p.rows for p in store.catalog.snapshot().table_parts("labels")] == [3]
    assert sql(store, labels) == [("r0", "c1", 0.0), ("r1", "c1", 1.0)]
    assert sql(store, probes) == [("r1", 8, 2)]
    with store.connect() as con:  # the views file: parts named, no run folder globbed
        assert con.execute(labels).fetchall() == [("r0", "c1", 0.0), ("r1", "c1", 1.0)]
        ddl = con.execute(
            "SELECT string_agg(sql, ' ') FROM duckdb_views() WHERE view_name IN "
            "('labels', 'calibrations', 'probes')"
        ).fetchone()[0]
    assert "/runs/" not in ddl
    # Damaged after compaction: found when named, then out of every view with its records.
    os.truncate(store.layout.table_path("r1", "outputs"), 10)
    with pytest.raises(RunDamaged, match="outputs.parquet: truncated"):
        store.require_intact("r1")
    assert sql(store, labels) == [("r0", "c1", 0.0)]
    assert sql(store, probes) == []
    assert sql(store, "SELECT DISTINCT run_id FROM metric_summaries ORDER BY 1") == [
        ("r0",),
        ("r2",),
    ]
    assert [r.run_id for r in store.damaged_runs()] == ["r1"]


def test_a_catalog_from_before_records_were_logged_logs_them_once(tmp_path) -> None:
    store = RunStore(tmp_path / "store")
    sample.write_run(store, "r0")
    store.write_label(new_label("r0", "c1", "generation.groundedness", 1.0, "ann"))
    shutil.rmtree(store.layout.catalog_log_dir("labels"))
    store.ensure_views()
    assert len(store.catalog.log_files("labels")) == 1
    assert sql(store, "SELECT run_id, score FROM labels") == [("r0", 1.0)]


def test_a_damaged_run_on_a_read_only_store_is_left_out_by_the_reader(
    compacted, tmp_path, monkeypatch
) -> None:
    store = copy_of(compacted, tmp_path)
    os.truncate(store.layout.table_path("r17", "case_results"), 10)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Catalog, "mark", refuse)
    runs = COMPACT_EVERY + 3
    assert sql(store, "SELECT count(*) FROM case_results") == [((runs - 1) * RESULT_ROWS,)]
    assert sql(store, "SELECT status FROM runs WHERE run_id = 'r17'") == [("damaged",)]
    assert store.damaged_runs() == []  # nothing was written


def test_a_store_without_a_catalog_gets_one_from_its_run_folders(compacted, tmp_path) -> None:
    store = copy_of(compacted, tmp_path)
    sample.write_run(store, "killed", finish=False)
    shutil.rmtree(store.layout.catalog_dir)
    runs = COMPACT_EVERY + 3
    assert sql(store, "SELECT count(*) FROM case_results") == [(runs * RESULT_ROWS,)]
    # No heartbeat: a run that never finished is interrupted at once.
    assert sql(store, "SELECT status FROM runs WHERE run_id = 'killed'") == [("interrupted",)]
    assert store.catalog.snapshot().seq == 1


def test_of_two_compactions_at_once_one_wins_and_nothing_is_lost(tmp_path) -> None:
    store = RunStore("memory://catalog-race/" + tmp_path.name)
    for index in range(4):
        sample.write_run(store, f"m{index}")
    first, second = Catalog(store.layout, store.files), Catalog(store.layout, store.files)
    assert first.compact(min_entries=0) is True
    # The second read the same snapshot: its successor's name is taken, it gives way.
    original = second.snapshot
    second.snapshot = lambda: type(original())()  # as if it had listed before the first wrote
    assert second.compact(min_entries=0) is False
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (4,)
        assert con.execute("SELECT count(*) FROM case_results").fetchone() == (4 * RESULT_ROWS,)


def test_a_running_runs_end_between_a_readers_listing_and_its_query_fails_nothing(
    tmp_path,
) -> None:
    """Two runs at once: one ends (its heartbeat file goes) after the other's reader
    listed the catalog; the reader still reads (its beats were read with the listing)."""
    store = RunStore(tmp_path / "store")
    sample.write_run(store, "done")
    sample.write_run(store, "busy", finish=False)
    con = views.connect_confined(store.layout)
    try:
        store.catalog.end_beats("busy")
        assert con.execute("SELECT run_id, status FROM runs ORDER BY run_id").fetchall() == [
            ("busy", "running"),
            ("done", "completed"),
        ]
    finally:
        con.close()


def test_a_catalog_file_removed_after_the_listing_is_read_again_not_taken_for_damage(
    compacted, tmp_path, monkeypatch
) -> None:
    """gc removes a run between a reader's listing and its query: the query lists again
    and reads the rest; the run is not marked damaged."""
    store = copy_of(compacted, tmp_path)
    victim = "r18"  # in the log: its rows' files are listed by name
    listing = Catalog.state
    calls = []

    def listed_then_removed(self, found_damaged=None):
        state = listing(self, found_damaged)
        if not calls:
            Catalog(self.layout, self.files).mark(victim, "removed")
        calls.append(state)
        return state

    monkeypatch.setattr(Catalog, "state", listed_then_removed)
    runs = COMPACT_EVERY + 3
    assert sql(store, "SELECT count(*) FROM case_results") == [((runs - 1) * RESULT_ROWS,)]
    assert len(calls) == 2
    assert store.catalog.entries_of(victim).column("kind").to_pylist().count("damaged") == 0
    assert victim not in [r.run_id for r in store.list_runs()]


def test_an_object_replaced_while_read_is_recognised_by_its_bucket_path(tmp_path) -> None:
    """fsspec names an object changed under a reader by its path in the bucket (no
    protocol): a catalog file so named is read again; a run's own file is not."""
    store = RunStore("memory://catalog-changed/" + tmp_path.name)
    sample.write_run(store, "m0")
    entry = store.catalog.log_files("runs")[0]
    message = (
        f'Error: The remote file corresponding to filename {entry} and Etag "abc" no longer exists.'
    )
    assert damage.listed_then_changed(store.layout, duckdb.Error(message))
    own = store.layout.table_path("m0", "run")
    other = message.replace(str(entry), str(own))
    assert not damage.listed_then_changed(store.layout, duckdb.Error(other))


# Replaces one file with either of two others, atomically, every 0.1 s until killed: a
# run's end replacing its open catalog entry with the finished one, again and again.
REPLACER = """
import os, sys, time
target, first, second = sys.argv[1:]
tmp = target + ".swap"
while True:
    for source in (first, second):
        with open(source, "rb") as src, open(tmp, "wb") as out:
            out.write(src.read())
        os.replace(tmp, target)
        time.sleep(0.1)
"""


def test_a_catalog_entry_replaced_while_read_is_read_again_not_taken_for_damage(
    tmp_path, monkeypatch
) -> None:
    """DuckDB reads a Parquet footer when it binds a query and the file's bytes when it
    scans: a run's entry replaced in between (its end writes the finished entry over
    the open one) fails the read with a garbled footer and often no file named. A
    reader lists again and reads again (CI caught it as `don't know what type` in a
    run's summary step beside another run's end); no run is marked damaged."""
    store = RunStore(tmp_path / "store")
    sample.write_run(store, "done")
    sample.write_run(store, "ending", finish=False)
    entry = next(p for p in store.catalog.log_files("runs") if "ending" in p.name)
    opened = tmp_path / "open.parquet"
    shutil.copyfile(entry, opened)
    store.write_run(sample.record("ending"))
    finished = tmp_path / "finished.parquet"
    shutil.copyfile(entry, finished)
    torn = []
    recognise = damage.replaced_while_read

    def counted(exc):
        torn.append(recognise(exc))
        return torn[-1]

    monkeypatch.setattr(damage, "replaced_while_read", counted)
    replacer = subprocess.Popen(
        [sys.executable, "-c", REPLACER, str(entry), str(opened), str(finished)]
    )
    listed = set()
    deadline = time.monotonic() + 60
    try:
        # Until the race has been met a few times (each torn read is one more attempt).
        while torn.count(True) < 3 and time.monotonic() < deadline:
            listed.add(tuple(r.run_id for r in store.list_runs()))
    finally:
        replacer.kill()
        replacer.wait()
    assert torn.count(True) >= 1, "the replacement never landed between bind and scan"
    # Every read saw the run open or finished, never anything else; once the run's end
    # has landed for good, it is listed.
    assert listed <= {("done",), ("done", "ending")}
    shutil.copyfile(finished, entry)
    assert [r.run_id for r in store.list_runs()] == ["done", "ending"]
    kinds = store.catalog.entries_of("ending").column("kind").to_pylist()
    assert "damaged" not in kinds


def test_a_garbled_footer_is_retried_a_bounded_number_of_times(tmp_path) -> None:
    """A file damaged for good fails every attempt the same way: the reader tries
    `MAX_VANISHED` more times, each after a longer pause, then the error stands."""
    store = RunStore(tmp_path / "store")
    attempts = []

    def garbled(found):
        attempts.append(dict(found))
        raise duckdb.Error("TProtocolException: Invalid data")

    with pytest.raises(duckdb.Error, match="Invalid data"):
        damage.retrying(store.layout, garbled)
    assert len(attempts) == damage.MAX_VANISHED + 1
    assert damage.replaced_while_read(duckdb.Error("Error: don't know what type: \x0e"))
    assert not damage.replaced_while_read(duckdb.Error("Binder Error: no column x"))


@pytest.mark.parametrize("where", ["local", "object"])
def test_a_refused_resume_never_beats_for_the_stopped_run(where, tmp_path) -> None:
    """The command around ``run --resume`` beats only once the resume has opened the run
    anew (its open entry newer than the command): a refused resume leaves a stopped run
    interrupted, on a local and an object store alike (CONTRACT section 29)."""
    root = tmp_path / "store" if where == "local" else f"memory://refused/{tmp_path.name}"
    store = RunStore(root)
    manifest = {"run_id": "stopped", "dataset": "golden.jsonl"}
    store.write_manifest("stopped", manifest)
    # Stopped an hour ago: its open entry that old, its heartbeat gone.
    for path in store.catalog.log_files("runs"):
        store.files.remove(path)
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    store.catalog.write_entry(open_entry_row("stopped", new_entry(hour_ago), manifest))
    store.catalog.end_beats("stopped")
    beat = store.layout.heartbeat_path("stopped")

    with store.heartbeat("stopped", once_started=True) as refused:
        refused._beat_once()
    assert not store.files.is_file(beat)
    states = store.catalog_query(f"SELECT status FROM {RUN_STATES_VIEW}")
    assert states.column("status").to_pylist() == ["interrupted"]

    with store.heartbeat("stopped", once_started=True) as resumed:
        store.write_manifest("stopped", manifest)  # the resume opens the run anew
        resumed._beat_once()
        assert store.files.is_file(beat)
