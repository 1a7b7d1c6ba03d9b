"""`ragproof suites check` (CONTRACT section 30): each suite and its schedule, or the
one line ragproof's code location fails to load with, exit 1."""

from __future__ import annotations

import pytest

from ragproof_assets.definitions import location
from ragproof_core.config import ConfigError
from tests.support.cli import cli_env, ragproof


def test_each_suite_and_its_schedule(tmp_path):
    path = tmp_path / "suites.toml"
    path.write_text(
        '[[suite]]\nname = "support_bot"\ndataset = "cases.jsonl"\n'
        'cron = "30 6 * * MON-FRI"\ntimezone = "Europe/Paris"\nkeep_last = 20\n\n'
        '[[suite]]\nname = "weekly"\ndataset = "data/demo/cases.jsonl"\nk = 3\n'
    )
    done = ragproof("suites", "check", env=cli_env(RAGPROOF_SUITES=str(path)))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "ragproof_support_bot: cases.jsonl, running (30 6 * * MON-FRI Europe/Paris), keep_last 20",
        "ragproof_weekly: data/demo/cases.jsonl, stopped until turned on (0 2 * * * UTC)",
    ]
    # --file names another file than the environment's.
    done = ragproof("suites", "check", "--file", "data/suites.toml", env=cli_env())
    assert (
        done.stdout == "ragproof_demo: data/demo/cases.jsonl, stopped until turned on "
        "(0 2 * * * UTC)\n"
    )


def test_a_mistake_is_the_line_the_location_fails_to_load_with(tmp_path, monkeypatch):
    path = tmp_path / "suites.toml"
    path.write_text(
        '[[suite]]\nname = "ok"\ndataset = "a.jsonl"\n\n'
        '[[suite]]\nname = "late"\ndataset = "a.jsonl"\ncron = "0 2 * * 8"\n'
    )
    done = ragproof("suites", "check", "--file", str(path))
    assert (done.returncode, done.stdout) == (1, "")
    monkeypatch.setenv("RAGPROOF_SUITES", str(path))
    with pytest.raises(ConfigError) as load:
        location()
    assert done.stderr == f"ragproof: {load.value}\n"
    assert str(load.value).startswith(f"{path}: suite #2 (late): cron: not a cron schedule")
