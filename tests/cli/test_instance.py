"""The Dagster home the command line records its runs in (ragproof_cli/instance.py)."""

from __future__ import annotations

import pytest
import yaml

from ragproof_cli.instance import earlier_dagster_yamls, ensure_dagster_home

# What ragproof wrote into a new home before it named its compute log manager.
EARLIER = "telemetry:\n  enabled: false\n"


def test_a_new_home_names_ragproofs_manager_and_storage_with_dagsters_own_folders(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    home = ensure_dagster_home()
    assert yaml.safe_load((home / "dagster.yaml").read_text()) == {
        "telemetry": {"enabled": False},
        "compute_logs": {
            "module": "ragproof_assets.instance.compute_logs",
            "class": "MirroredComputeLogManager",
            "config": {"base_dir": str(tmp_path / "storage")},
        },
        "storage": {
            "custom": {
                "module": "ragproof_assets.instance.sqlite_storage",
                "class": "KeptEngineSqliteStorage",
                "config": {"base_dir": str(tmp_path)},
            }
        },
    }
    # Nothing else is left in the home: the file was written whole beside it, then moved.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dagster.yaml"]


@pytest.mark.parametrize("made_by", [0, 1], ids=["telemetry only", "compute logs"])
def test_a_home_as_an_earlier_ragproof_made_it_is_brought_up_to_date(
    made_by, tmp_path, monkeypatch
):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text(earlier_dagster_yamls(tmp_path)[made_by])
    ensure_dagster_home()
    settings = yaml.safe_load((tmp_path / "dagster.yaml").read_text())
    assert settings["compute_logs"]["class"] == "MirroredComputeLogManager"
    assert settings["storage"]["custom"]["class"] == "KeptEngineSqliteStorage"


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
