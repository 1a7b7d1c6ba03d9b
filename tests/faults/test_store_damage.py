"""Store faults through the installed command (CONTRACT section 29): a truncated and a
deleted run file, a garbage judge cache, a read-only store, `verify --repair`, and gc.
Real files, real mounts, real runs of `ragproof run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragproof_core.store import RunStore
from ragproof_core.store.catalog import COMPACT_EVERY
from tests.core.store import sample
from tests.support import mounts
from tests.support.cli import cli_env, ragproof
from tests.support.runs import Runs

FIXTURES = Path(__file__).parents[1] / "fixtures" / "serve"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Runs:
    """Three finished runs of the recorded serve fixture, made by `ragproof run`."""
    runs = Runs(tmp_path_factory.mktemp("store-damage"))
    runs.ids = [runs.run(FIXTURES, "ragproof.toml") for _ in range(3)]  # type: ignore[attr-defined]
    return runs


@pytest.fixture
def store(made: Runs, tmp_path: Path) -> Iterator[Runs]:
    """A copy of the made store (hard links kept, as the catalog's log has them)."""
    copy = Runs(tmp_path)
    subprocess.run(["cp", "-a", str(made.store), str(copy.store)], check=True)
    subprocess.run(["cp", "-a", made.env["DAGSTER_HOME"], copy.env["DAGSTER_HOME"]], check=True)
    copy.ids = made.ids  # type: ignore[attr-defined]
    yield copy


def sql(runs: Runs, query: str) -> subprocess.CompletedProcess:
    return ragproof("sql", query, "--json", env=runs.env)


def test_a_truncated_run_is_damaged_listed_and_not_contagious(store: Runs) -> None:
    victim, *others = store.ids
    path = store.store / "runs" / victim / "case_results.parquet"
    os.truncate(path, 20)
    warning = (
        f"ragproof: warning: run {victim} is damaged (runs/{victim}/case_results.parquet) and "
        "left out; `ragproof verify --repair` moves it to quarantine/"
    )
    done = sql(store, "SELECT run_id, count(*) AS n FROM case_results GROUP BY run_id")
    assert done.returncode == 0, done.stderr
    assert sorted(row["run_id"] for row in json.loads(done.stdout)) == sorted(others)
    assert done.stderr.splitlines() == [warning]
    listed = ragproof("runs", "--json", env=store.env)
    assert listed.returncode == 0, listed.stderr
    damaged = [r for r in json.loads(listed.stdout) if r["status"] == "damaged"]
    assert [(r["run_id"], r["damaged_file"]) for r in damaged] == [
        (victim, f"runs/{victim}/case_results.parquet")
    ]
    for command in (("show", victim), ("report", victim), ("compare", victim, others[0])):
        named = ragproof(*command, env=store.env)
        assert named.returncode == 5, (command, named.stderr)
        assert named.stderr.startswith(f"ragproof: the store: run '{victim}' is damaged: "), (
            named.stderr
        )
        assert len(named.stderr.splitlines()) == 1
    fine = ragproof("show", others[0], env=store.env)
    assert fine.returncode == 0, fine.stderr
    assert fine.stderr.splitlines() == [warning]


def test_a_deleted_file_is_found_when_listed_and_verify_repair_quarantines_it(
    store: Runs,
) -> None:
    victim = store.ids[1]
    (store.store / "runs" / victim / "outputs.parquet").unlink()
    checked = ragproof("verify", env=store.env)
    assert checked.returncode == 5
    assert f"damaged: run {victim}: runs/{victim}/outputs.parquet: missing" in checked.stdout
    repaired = ragproof("verify", "--repair", env=store.env)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert (store.store / "quarantine" / "runs" / victim / "manifest.json").is_file()
    assert not (store.store / "runs" / victim).exists()
    again = ragproof("verify", "--json", env=store.env)
    assert again.returncode == 0, again.stdout
    assert json.loads(again.stdout)["problems"] == []
    listed = json.loads(ragproof("runs", "--json", env=store.env).stdout)
    assert victim not in [r["run_id"] for r in listed]


def test_a_garbage_judge_cache_is_quarantined_by_verify(store: Runs) -> None:
    cache = store.store / "judge_cache.sqlite"
    cache.write_bytes(b"not a database" * 64)
    checked = ragproof("verify", env=store.env)
    assert checked.returncode == 5
    assert "cache: judge_cache.sqlite: cannot be read (file is not a database)" in checked.stdout
    assert ragproof("verify", "--repair", env=store.env).returncode == 0
    assert [p.read_bytes() for p in (store.store / "quarantine").glob("judge_cache-*")] == [
        b"not a database" * 64
    ]


@pytest.fixture
def read_only(store: Runs, tmp_path: Path) -> Iterator[Runs]:
    """The store on a read-only bind mount (skipped where mounting is not allowed)."""
    with mounts.read_only(store.store, tmp_path / "ro") as mount:
        store.env["RAGPROOF_STORE"] = str(mount)
        yield store


def test_a_read_only_store_is_read_and_a_run_on_it_exits_5(read_only: Runs, tmp_path) -> None:
    first, second, _ = read_only.ids
    before = sorted(p.name for p in Path(read_only.env["RAGPROOF_STORE"]).rglob("*"))
    listed = ragproof("runs", "--json", env=read_only.env)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 3
    assert ragproof("show", first, env=read_only.env).returncode == 0
    counted = sql(read_only, "SELECT count(*) AS n FROM metric_summaries")
    assert counted.returncode == 0, counted.stderr
    assert ragproof("compare", first, second, env=read_only.env).returncode == 0
    out = tmp_path / "report.html"
    reported = ragproof("report", first, "--out", str(out), env=read_only.env)
    assert reported.returncode == 0, reported.stderr
    assert out.is_file()
    refused = ragproof(
        "run",
        "--dataset",
        str(FIXTURES / "cases.jsonl"),
        "--config",
        str(FIXTURES / "ragproof.toml"),
        env=read_only.env,
    )
    assert refused.returncode == 5
    assert refused.stderr.splitlines() == [
        f"ragproof: the store could not be written: {read_only.env['RAGPROOF_STORE']}: "
        "Read-only file system"
    ]
    assert sorted(p.name for p in Path(read_only.env["RAGPROOF_STORE"]).rglob("*")) == before


def test_gc_keeps_the_newest_and_removes_the_rest_from_store_and_dagster(store: Runs) -> None:
    oldest, middle, newest = store.ids
    dry = ragproof("gc", "--keep-last", "1", "--dry-run", "--json", env=store.env)
    assert dry.returncode == 0, dry.stderr
    assert [r["run_id"] for r in json.loads(dry.stdout)["removed"]] == [oldest, middle]
    assert (store.store / "runs" / oldest).is_dir()
    done = ragproof("gc", "--keep-last", "1", env=store.env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"removed {oldest} (completed, ")
    assert lines[-1].startswith("2 run(s) removed, ") and lines[-1].endswith(" bytes freed")
    assert not (store.store / "runs" / oldest).exists()
    listed = json.loads(ragproof("runs", "--json", env=store.env).stdout)
    assert [r["run_id"] for r in listed] == [newest]
    counted = json.loads(sql(store, "SELECT count(DISTINCT run_id) AS n FROM case_results").stdout)
    assert counted == [{"n": 1}]
    # Dagster forgot them too: their partitions are gone.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import dagster as dg; i = dg.DagsterInstance.get(); "
            "print(sorted(i.get_dynamic_partitions('evaluation_runs')))",
        ],
        env=store.env,
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    assert oldest not in probe.stdout and newest in probe.stdout


@pytest.fixture(scope="module")
def compacted_store(tmp_path_factory) -> Path:
    """More runs than one compaction folds, written through the store's own write path:
    the oldest runs' rows are read from the catalog's parts, not their folders."""
    root = tmp_path_factory.mktemp("store-damage-compacted") / "store"
    store = RunStore(root)
    for index in range(COMPACT_EVERY + 3):
        sample.write_run(store, f"r{index:02d}")
    assert store.catalog.snapshot().seq == 1
    return root


def test_a_compacted_run_truncated_is_damaged_in_sql_and_runs(compacted_store, tmp_path) -> None:
    root = tmp_path / "store"
    subprocess.run(["cp", "-a", str(compacted_store), str(root)], check=True)
    env = cli_env(RAGPROOF_STORE=str(root))
    victim, runs = "r02", COMPACT_EVERY + 3  # compacted: no view reads its folder
    damaged_file = f"runs/{victim}/case_results.parquet"
    os.truncate(root / damaged_file, 20)
    # No command named or listed the run before: `sql` checks the newest runs itself.
    states = ragproof("sql", "SELECT run_id, status, damaged_file FROM runs", "--json", env=env)
    assert states.returncode == 0, states.stderr
    rows = {row["run_id"]: row for row in json.loads(states.stdout)}
    assert len(rows) == runs
    assert (rows[victim]["status"], rows[victim]["damaged_file"]) == ("damaged", damaged_file)
    assert {row["status"] for id_, row in rows.items() if id_ != victim} == {"completed"}
    assert states.stderr.splitlines() == [
        f"ragproof: warning: run {victim} is damaged ({damaged_file}) and left out; "
        "`ragproof verify --repair` moves it to quarantine/"
    ]
    counted = ragproof("sql", "SELECT count(DISTINCT run_id) AS n FROM case_results", env=env)
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.split()[-1] == str(runs - 1)
    listed = ragproof("runs", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [
        (r["run_id"], r["damaged_file"])
        for r in json.loads(listed.stdout)
        if r["status"] == "damaged"
    ] == [(victim, damaged_file)]


def test_sql_checks_only_the_newest_runs_files(compacted_store, tmp_path) -> None:
    """The check is bounded (a year of runs costs what 50 do): a run older than the newest
    ``limit`` is found when named, listed or read from its folder, not by this check."""
    root = tmp_path / "store"
    subprocess.run(["cp", "-a", str(compacted_store), str(root)], check=True)
    store = RunStore(root)
    os.remove(root / "runs" / "r00" / "outputs.parquet")
    assert store.check_newest(limit=3) == {}
    assert store.check_newest() == {"r00": "runs/r00/outputs.parquet"}
    assert [r.run_id for r in store.damaged_runs()] == ["r00"]
