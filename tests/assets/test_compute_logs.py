"""Step logs kept as Dagster's local manager keeps them, mirrored by a thread
(ragproof_assets/instance/compute_logs.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.cli import REPO, cli_env

FIXTURES = REPO / "tests" / "fixtures" / "compute_logs"


def _python(script: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(FIXTURES / script), *args],
        capture_output=True,
        text=True,
        env=cli_env(**env),
        cwd=REPO,
        timeout=120,
        check=True,
    )


def test_a_steps_output_is_captured_for_the_ui_and_shown_with_no_helper_process(tmp_path):
    captured = tmp_path / "captured.json"
    run = _python("step_prints.py", str(captured), DAGSTER_HOME=str(tmp_path / "home"))
    logs = json.loads(captured.read_text())

    assert logs["manager"] == "MirroredComputeLogManager"
    assert logs["success"] is True
    assert logs["complete"] == [True]
    # What the UI shows for the run's steps.
    assert logs["stdout"] == ["to stdout from the step; children: 0\n"]
    assert "to stderr from the step\n" in logs["stderr"][0]
    # What the terminal shows: the same lines, copied there by the thread.
    assert "to stdout from the step; children: 0\n" in run.stdout
    assert "to stderr from the step\n" in run.stderr


def test_every_writer_reaches_the_file_and_the_terminal_in_order(tmp_path):
    log = tmp_path / "step.out"
    log.write_text("an earlier capture's line\n")
    run = _python("mirror_writes.py", str(log))

    inside = "from python\nfrom the descriptor\nfrom a child process\n"
    assert run.stdout == "before\n" + inside + "after\n"
    # The earlier capture's line is kept, not shown again.
    assert log.read_text() == "an earlier capture's line\n" + inside
