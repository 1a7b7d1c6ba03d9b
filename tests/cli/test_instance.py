"""The Dagster home the command line records its runs in (ragproof_cli/instance.py)."""

from __future__ import annotations

import yaml

from ragproof_cli.instance import ensure_dagster_home

# What ragproof wrote into a new home before it named its compute log manager.
EARLIER = "telemetry:\n  enabled: false\n"


def test_a_new_home_names_the_mirrored_manager_with_dagsters_own_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    home = ensure_dagster_home()
    assert yaml.safe_load((home / "dagster.yaml").read_text()) == {
        "telemetry": {"enabled": False},
        "compute_logs": {
            "module": "ragproof_assets.instance.compute_logs",
            "class": "MirroredComputeLogManager",
            "config": {"base_dir": str(tmp_path / "storage")},
        },
    }
    # Nothing else is left in the home: the file was written whole beside it, then moved.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dagster.yaml"]


def test_a_home_as_an_earlier_ragproof_made_it_is_brought_up_to_date(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text(EARLIER)
    ensure_dagster_home()
    settings = yaml.safe_load((tmp_path / "dagster.yaml").read_text())
    assert settings["compute_logs"]["class"] == "MirroredComputeLogManager"


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
