"""The forkserver a `ragproof run --shards N` run's step processes fork from.

Dagster's multiprocess executor starts each step in a process forked from
Python's forkserver, which imports once what every step imports
(``step_preload.py``): about two seconds of CPU, the longest part of the wait
for a run's first step. So the command starts it as early as it can, to import
beside the command's own imports, validation, instance and run:

- when ``--shards N`` (N > 1) is on the command line, before anything else
  (``start_before_parsing``): the command line alone, read before the parser
  exists (the parser's flags are declared by the config, whose modules import
  the metrics, Arrow and pandas);
- otherwise once the config says the run has several shards
  (``execution.start_step_server``).

The executor finds it running and uses it. It ends with the command
(``step_preload.end_with_parent``), so input refused after it started leaves
no process behind.
"""

from __future__ import annotations

import argparse
import multiprocessing
from collections.abc import Sequence
from multiprocessing import forkserver

from ragproof_assets.evaluation.executors import uses_default_executor
from ragproof_cli.step_stderr import filtered_stderr

# Imports the step modules in the forkserver, the collector paused (``step_preload.py``).
STEP_PRELOAD_MODULE = "ragproof_cli.step_preload"


def start(*, debug: bool = False) -> None:
    """Start the forkserver (nothing if it runs already). It and every step forked from
    it write to this stderr, without Dagster's own log lines unless ``debug``
    (``step_stderr.py``)."""
    multiprocessing.get_context("forkserver").set_forkserver_preload([STEP_PRELOAD_MODULE])
    if debug:
        forkserver.ensure_running()
        return
    with filtered_stderr():
        forkserver.ensure_running()


class _Unreadable(Exception):
    pass


class _PeekParser(argparse.ArgumentParser):
    """Reads a few flags and says nothing: the command's own parser words any error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Unreadable(message)


def shards_on_command_line(argv: Sequence[str]) -> int | None:
    """``--shards N`` of a `ragproof run` command line, read without its parser; None
    when absent, malformed, or the command only asks for help or an estimate."""
    peek = _PeekParser(add_help=False, exit_on_error=False)
    peek.add_argument("--shards", type=int)
    peek.add_argument("--dry-run", action="store_true")
    peek.add_argument("-h", "--help", action="store_true")
    try:
        known, _ = peek.parse_known_args(argv)
    except (argparse.ArgumentError, _Unreadable):
        return None
    if known.dry_run or known.help:
        return None
    return known.shards


def start_before_parsing(argv: Sequence[str], *, debug: bool) -> bool:
    """Start the forkserver now if ``argv`` (a `ragproof run` command line) asks for
    several shards and the steps run as local processes; whether it did."""
    shards = shards_on_command_line(argv)
    if shards is None or shards <= 1 or not uses_default_executor():
        return False
    start(debug=debug)
    return True
