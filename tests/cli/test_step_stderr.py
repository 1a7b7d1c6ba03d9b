"""The filter between the run's step processes and the command's stderr."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

from ragproof_cli.step_stderr import copy_lines, filtered_stderr, is_dagster_log

DAGSTER_LINE = (
    b"2026-12-02 10:59:32 +0000 - dagster - DEBUG - evaluate - b70b2cfa - 7720 - "
    b'eval_dataset - STEP_WORKER_STARTED - Executing step "eval_dataset" in subprocess.\n'
)


def test_dagster_log_lines_are_recognised_and_nothing_else():
    assert is_dagster_log(DAGSTER_LINE)
    assert is_dagster_log(DAGSTER_LINE.replace(b"DEBUG", b"ERROR"))
    assert not is_dagster_log(b"Traceback (most recent call last):\n")
    assert not is_dagster_log(b"ragproof: cases.jsonl:3: duplicate id 'a'\n")
    # A step's own message that quotes Dagster's format further along is kept.
    assert not is_dagster_log(b"warning: " + DAGSTER_LINE)


def test_copy_keeps_every_other_line_in_order():
    written: list[bytes] = []
    source = io.BytesIO(b"first\n" + DAGSTER_LINE + b"second\n" + DAGSTER_LINE + b"last")
    copy_lines(source, written.append)
    assert written == [b"first\n", b"second\n", b"last"]


def test_a_child_started_inside_writes_through_the_filter_and_ours_is_restored(capfd):
    # A real child process inherits the filtered fd 2; this process's own stderr is
    # the real one again once the block ends.
    script = (
        "import sys;"
        f"sys.stderr.buffer.write({DAGSTER_LINE!r});"
        "sys.stderr.buffer.write(b'kept\\n');sys.stderr.flush()"
    )
    with filtered_stderr():
        child = subprocess.Popen([sys.executable, "-c", script])
    os.write(2, b"ours\n")
    assert child.wait(timeout=60) == 0
    # The copying thread passes the child's lines on once it reads them.
    seen = ""
    deadline = time.monotonic() + 30
    while "kept" not in seen and time.monotonic() < deadline:
        time.sleep(0.02)
        seen += capfd.readouterr().err
    assert sorted(seen.splitlines()) == ["kept", "ours"]
