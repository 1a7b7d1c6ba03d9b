"""Pausing the cyclic collector (ragproof_core/gc_pause.py)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import REPO, cli_env

# In a fresh interpreter (freezing is for the whole process): how many objects are
# frozen after an import inside ``imports_paused``, and whether the collector runs.
FROZEN_AFTER_IMPORT = (
    "import gc, sys\n"
    "from ragproof_core.gc_pause import imports_paused\n"
    "if sys.argv[1] == 'frozen':\n"
    "    gc.freeze()\n"
    "before = gc.get_freeze_count()\n"
    "with imports_paused():\n"
    "    assert not gc.isenabled()\n"
    "    import json.decoder, email.parser\n"
    "print(gc.get_freeze_count() > before, gc.isenabled())\n"
)


def _frozen_after_import(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", FROZEN_AFTER_IMPORT, mode],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def test_imports_are_frozen_before_the_collector_resumes_in_a_process_that_freezes():
    assert _frozen_after_import("frozen") == "True True\n"


def test_imports_are_not_frozen_in_a_process_that_does_not_freeze():
    assert _frozen_after_import("plain") == "False True\n"
