"""The Dagster home the command line records its runs in (ragproof_cli/instance.py): Dagster's
own SQLite storages with its consolidated event log, no write-ahead log left behind, and a
home that grows by at most 250 KB a 50-case run (issue 53, item 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest
import yaml

from ragproof_cli.instance import (
    earlier_dagster_yamls,
    ensure_dagster_home,
    run_database_dagster_yaml,
)
from tests.support.cli import cli_env, run_json

# What ragproof wrote into a new home before it named its compute log manager.
EARLIER = "telemetry:\n  enabled: false\n"
# At most this many bytes of DAGSTER_HOME a 50-case run (issue 53, item 2).
HOME_BYTES_PER_RUN = 250_000


def _storage(home: Path, module: str, cls: str, folder: str) -> dict:
    return {"module": module, "class": cls, "config": {"base_dir": str(home / folder)}}


def test_a_new_home_names_dagsters_own_storages_and_ragproofs_compute_logs(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    home = ensure_dagster_home()
    assert yaml.safe_load((home / "dagster.yaml").read_text()) == {
        "telemetry": {"enabled": False},
        "compute_logs": {
            "module": "ragproof_assets.instance.compute_logs",
            "class": "MirroredComputeLogManager",
            "config": {"base_dir": str(tmp_path / "storage")},
        },
        "run_storage": _storage(
            tmp_path, "dagster._core.storage.runs", "SqliteRunStorage", "history"
        ),
        "event_log_storage": _storage(
            tmp_path,
            "dagster._core.storage.event_log",
            "ConsolidatedSqliteEventLogStorage",
            "history",
        ),
        "schedule_storage": _storage(
            tmp_path, "dagster._core.storage.schedules", "SqliteScheduleStorage", "schedules"
        ),
    }
    # Nothing else is left in the home: the file was written whole beside it, then moved.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dagster.yaml"]
    with dg.DagsterInstance.get() as instance:
        names = {type(s).__name__ for s in (instance.run_storage, instance.event_log_storage)}
        assert names == {"SqliteRunStorage", "ConsolidatedSqliteEventLogStorage"}


@pytest.mark.parametrize(
    "made_by", [0, 1, 2], ids=["telemetry only", "compute logs", "ragproof's sqlite storage"]
)
def test_a_home_as_an_earlier_ragproof_made_it_keeps_its_runs_on_dagsters_sqlite_storage(
    made_by, tmp_path, monkeypatch
):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    # Every earlier home kept Dagster's SQLite layout, a database a run: made here by
    # Dagster's own storage, then given the earlier ragproof's dagster.yaml.
    (tmp_path / "dagster.yaml").write_text(run_database_dagster_yaml(tmp_path))
    with dg.DagsterInstance.get() as instance:
        run_id = dg.materialize([numbers], instance=instance).run_id
    (tmp_path / "dagster.yaml").write_text(earlier_dagster_yamls(tmp_path)[made_by])

    ensure_dagster_home()
    settings = yaml.safe_load((tmp_path / "dagster.yaml").read_text())
    assert settings["storage"] == {"sqlite": {"base_dir": str(tmp_path)}}
    assert settings["compute_logs"]["class"] == "MirroredComputeLogManager"
    with dg.DagsterInstance.get() as instance:
        assert [run.run_id for run in instance.get_runs()] == [run_id]
        assert any(
            e.dagster_event_type == "ASSET_MATERIALIZATION" for e in instance.all_logs(run_id)
        )


@dg.asset
def numbers() -> int:
    return 7


def test_a_dagster_yaml_of_the_users_own_is_left_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    own = EARLIER + "run_queue:\n  max_concurrent_runs: 2\n"
    (tmp_path / "dagster.yaml").write_text(own)
    ensure_dagster_home()
    assert (tmp_path / "dagster.yaml").read_text() == own


def test_the_dagster_yaml_is_as_readable_as_any_new_file(tmp_path, monkeypatch):
    # The UI or a daemon may run as another user of the same group.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "probe").write_text("")
    ensure_dagster_home()
    assert (tmp_path / "dagster.yaml").stat().st_mode == (tmp_path / "probe").stat().st_mode


def _recorded_run(folder: Path, cases: int) -> tuple[Path, Path]:
    """A dataset of ``cases`` retrieval cases and their recorded outputs, with its config."""
    dataset, outputs = folder / "cases.jsonl", folder / "outputs.jsonl"
    with dataset.open("w") as d, outputs.open("w") as o:
        for i in range(cases):
            case = {"id": f"c{i}", "question": f"what is {i}?", "expected_source_ids": [f"d{i}"]}
            d.write(json.dumps(case) + "\n")
            retrieved = [{"id": f"d{i + j}", "text": f"passage {i + j}"} for j in range(3)]
            output = {"case_id": f"c{i}", "retrieve": retrieved, "answer": {"text": f"{i}"}}
            o.write(json.dumps(output) + "\n")
    config = folder / "ragproof.toml"
    config.write_text(
        '[adapter]\ntarget = "ragproof_core.adapters.recorded:RecordedAdapter"\n'
        'options = { path = "outputs.jsonl" }\n'
    )
    return dataset, config


def _home_bytes(home: Path) -> int:
    return sum(path.stat().st_size for path in home.rglob("*") if path.is_file())


@pytest.mark.slow
def test_runs_leave_no_write_ahead_log_and_at_most_250_kb_a_50_case_run(tmp_path):
    home = tmp_path / "dagster_home"
    env = cli_env(DAGSTER_HOME=str(home), RAGPROOF_STORE=str(tmp_path / "store"))
    dataset, config = _recorded_run(tmp_path, 50)
    sizes = []
    for _ in range(3):
        assert run_json(dataset, config, env=env)["status"] == "completed"
        sizes.append(_home_bytes(home))
        # SQLite's write-ahead logs are checkpointed into their databases and removed.
        assert sorted(p.name for p in home.rglob("*-wal")) == []
    # The first run sets the databases up; each later one adds its own runs and events.
    per_run = (sizes[-1] - sizes[0]) / (len(sizes) - 1)
    assert 0 < per_run <= HOME_BYTES_PER_RUN, f"{per_run:,.0f} bytes a run"
    assert sorted(os.listdir(home / "history")) == ["event_log.db", "runs.db"]
