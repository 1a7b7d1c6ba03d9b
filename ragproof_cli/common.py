"""What every `ragproof` command shares: exit codes, the user-error type, the store
and JSON printing."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator

# Declared with the error reporting, which every command imports first and which must not
# import the store; shared from here with the store and the printing.
from ragproof_cli.errors import (
    EXIT_BAD_INPUT,
    EXIT_BUDGET,
    EXIT_INTERNAL,
    EXIT_JUDGE_UNAVAILABLE,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_STORE_FAULT,
    UsageError,
    judge_unavailable_line,
)
from ragproof_core.config import store_root
from ragproof_core.store import RunStore

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BUDGET",
    "EXIT_INTERNAL",
    "EXIT_JUDGE_UNAVAILABLE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_STORE_FAULT",
    "UsageError",
    "all_metrics_flag",
    "judge_unavailable_line",
    "open_store",
    "print_json",
    "stdout_to_stderr",
    "warn_damaged",
]


def all_metrics_flag(parser: argparse.ArgumentParser) -> None:
    """``--all-metrics``: list the metrics with nothing scored too (CONTRACT section 25)."""
    parser.add_argument(
        "--all-metrics",
        action="store_true",
        help="also list the metrics with nothing scored (every case skipped or not applicable)",
    )


def open_store() -> RunStore:
    return RunStore(store_root())


def warn_damaged(store: RunStore, named: tuple[str, ...] = ()) -> None:
    """One warning line on stderr per damaged run the command did not name (CONTRACT
    section 29): the command worked without it."""
    for record in store.damaged_runs():
        if record.run_id in named:
            continue
        print(
            f"ragproof: warning: run {record.run_id} is damaged ({record.damaged_file}) and "
            "left out; `ragproof verify --repair` moves it to quarantine/",
            file=sys.stderr,
        )


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=str))


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send whatever is written to standard output meanwhile to standard error.

    An adapter that prints (or a library it calls, or a step process it starts)
    must not corrupt the command's own output, ``--json`` above all. File
    descriptor 1 is redirected as well as ``sys.stdout``, so C code and child
    processes are caught too.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)
