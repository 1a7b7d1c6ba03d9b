"""An internal error (a bug in ragproof) exits 3 with one line that says so and how to
see the traceback (CONTRACT section 14); --debug or RAGPROOF_DEBUG=1 shows it.

A bug cannot be provoked through the shipped command on purpose, so a command's
handler is replaced by one that fails the way a bug would, and ``main`` runs in
this process."""

from __future__ import annotations

import pytest

import ragproof_cli as cli
from ragproof_cli import run as run_commands
from tests.assets.expected import RECORDED

CONFIG = RECORDED / "ragproof.toml"

LINE = (
    "ragproof: internal error (a bug in ragproof): KeyError: 'bug'; "
    "run again with --debug (or RAGPROOF_DEBUG=1) for the traceback\n"
)


@pytest.fixture
def buggy_runs(monkeypatch):
    def cmd_runs(args):
        raise KeyError("bug")

    monkeypatch.setattr(run_commands, "cmd_runs", cmd_runs)


def test_a_bug_exits_3_with_one_line(buggy_runs, capsys, monkeypatch):
    monkeypatch.delenv("RAGPROOF_DEBUG", raising=False)
    assert cli.main(["runs"]) == 3
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", LINE)


@pytest.mark.parametrize(("argv", "env"), [(["--debug", "runs"], "0"), (["runs"], "1")])
def test_debug_shows_the_traceback_first(buggy_runs, capsys, monkeypatch, argv, env):
    monkeypatch.setenv("RAGPROOF_DEBUG", env)
    assert cli.main(argv) == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert 'raise KeyError("bug")' in err
    assert err.endswith(LINE)


def test_a_bug_inside_a_dagster_step_is_one_line_not_the_step_failure_dump(
    capfd, monkeypatch, store_path
):
    # The evaluation step itself fails the way a bug would: Dagster records the step
    # failure (and the UI shows its logs), the command prints one line and exits 3.
    from ragproof_assets.evaluation import shards

    async def broken_evaluate(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    def broken_evaluate_recorded(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    # Both ways a shard scores a batch: a stored recording from its columns, any other
    # adapter's cases one by one.
    monkeypatch.setattr(shards, "evaluate", broken_evaluate)
    monkeypatch.setattr(shards, "evaluate_recorded", broken_evaluate_recorded)
    monkeypatch.delenv("RAGPROOF_DEBUG", raising=False)
    code = cli.main(["run", "--dataset", str(RECORDED / "cases.jsonl"), "--config", str(CONFIG)])
    captured = capfd.readouterr()
    assert code == 3
    assert captured.err == (
        "ragproof: internal error (a bug in ragproof): ZeroDivisionError: division by zero; "
        "run again with --debug (or RAGPROOF_DEBUG=1) for the traceback\n"
    )
    assert captured.out == ""
