"""On a machine without Chromium the browser tests skip, saying why and how to enable them."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.cli import REPO


def test_browser_tests_skip_with_the_reason_and_the_command_that_enables_them():
    env = {**os.environ, "RAGPROOF_CHROMIUM": "/nonexistent/chromium", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q"]
        + ["tests/browser/test_report_page.py", "tests/browser/test_dagster_ui.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    reason = (
        "no Chromium at /nonexistent/chromium: the browser tests are skipped; "
        "to run them: sudo apt-get install -y chromium (or set RAGPROOF_CHROMIUM)"
    )
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all(line.endswith(reason) for line in skips), done.stdout
    assert " passed" not in done.stdout and "error" not in done.stdout.lower()
    assert "skipped" in done.stdout.splitlines()[-1]
