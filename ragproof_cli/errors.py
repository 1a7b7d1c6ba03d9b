"""How the command line reports errors (CONTRACT sections 14 and 29).

Bad input of any kind, a usage error included, is one line ``ragproof: ...``
and exit 1; a fault of the store or of ``DAGSTER_HOME`` (a full disk, a read-only
mount, a damaged file) is one line ``ragproof: the store ...`` naming the file and
exit 5; a signal ends a command with 130 (SIGINT) or 143 (SIGTERM); anything else is
a bug: one line saying so and exit 3. ``--debug`` (or ``RAGPROOF_DEBUG=1``) adds the
traceback.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from ragproof_core.errors import StoreFault, UserError

EXIT_OK, EXIT_BAD_INPUT, EXIT_BUDGET = 0, 1, 2
EXIT_INTERNAL = 3
EXIT_REGRESSION = 4
EXIT_STORE_FAULT = 5
EXIT_JUDGE_UNAVAILABLE = 6
EXIT_SIGINT = 130  # CONTRACT section 29
EXIT_SIGTERM = 143

# What each exit code means, as ``ragproof --help`` lists them.
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_BAD_INPUT: "bad input (a usage error included), failed calibration or a refused "
    "comparison",
    EXIT_BUDGET: "a run or calibration stopped at its judge budget (aborted:budget)",
    EXIT_INTERNAL: "an internal error (a bug)",
    EXIT_REGRESSION: "a regression found by compare --fail-on-regression",
    EXIT_STORE_FAULT: "a store fault",
    EXIT_JUDGE_UNAVAILABLE: "the judge could not answer, and the run stopped calling it "
    "(aborted:judge)",
    EXIT_SIGINT: "interrupted by SIGINT (Ctrl-C): the run is kept, `run --resume` continues it",
    EXIT_SIGTERM: "interrupted by SIGTERM: the run is kept, `run --resume` continues it",
}


def exit_codes_help() -> str:
    """The exit codes, one a line, for ``ragproof --help``."""
    return "exit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


def judge_unavailable_line(reason: str) -> str:
    """The one line of a command the judge's breaker stopped (CONTRACT section 24)."""
    return f"ragproof: judge unavailable: {one_line(reason)}"


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit 1."""


# Errors whose message is already the one line a user needs: the core's (a bad config,
# dataset or adapter, an unknown run, a store written by another version) derive from
# ``UserError``, so this module, which every command imports first, imports none of them.
USER_ERRORS: tuple[type[BaseException], ...] = (UsageError, UserError)
DEBUG_HINT = "run again with --debug (or RAGPROOF_DEBUG=1) for the traceback"


def mixed_judges_refusal(exc: Exception) -> str:
    """The line ``compare`` and ``report --against`` print when the judges differ:
    the error's own sentences, then how to compare anyway."""
    return f"ragproof: refusing to compare: {exc} Pass --allow-mixed-judges to compare anyway."


def mixed_settings_refusal(exc: Exception) -> str:
    """The line ``compare`` prints when the runs' ``run.k`` or ``run.source_match`` differ."""
    return f"ragproof: refusing to compare: {exc} Pass --allow-mixed-settings to compare anyway."


class OneLineParser(argparse.ArgumentParser):
    """argparse exits 2 with the usage text on a usage error; CONTRACT reserves 2 for a
    budget abort, so a usage error becomes a ``UsageError`` (one line, exit 1)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("ragproof").strip()
        # Arguments are quoted back in the message; a newline in one must not break the line.
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        raise UsageError(f"{command}: {message}" if command else message)


def debug_requested(argv: Sequence[str]) -> bool:
    # Read before parsing, so a usage error can show its traceback too.
    flag = os.environ.get("RAGPROOF_DEBUG", "").strip().lower()
    return "--debug" in argv or flag not in ("", "0", "false", "no")


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def user_message(exc: BaseException) -> str:
    return f"ragproof: {one_line(str(exc))}"


def internal_message(exc: BaseException) -> str:
    detail = one_line(str(exc))
    what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return f"ragproof: internal error (a bug in ragproof): {what}; {DEBUG_HINT}"


# Errors of a disk or a mount, not of ragproof: wherever they happen, a store fault.
FAULT_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO, errno.EACCES})


def _homes() -> list[tuple[str, Path]]:
    """What a fault is named after, and where it lives: the store, then DAGSTER_HOME."""
    store = os.environ.get("RAGPROOF_STORE") or "data/store"
    found = []
    if "://" not in store:
        found.append(("the store", Path(store).expanduser().resolve()))
    home = os.environ.get("DAGSTER_HOME")
    if home:
        found.append(("DAGSTER_HOME", Path(home).expanduser().resolve()))
    return found


# SQLite's own words for a disk that cannot take a write (Dagster's stock storages are
# SQLite files in DAGSTER_HOME, reached through SQLAlchemy).
_SQLITE_DISK_FAULTS = (
    "database or disk is full",
    "disk i/o error",
    "attempt to write a readonly database",
    "unable to open database file",
)


def dagster_home_fault(exc: BaseException) -> str | None:
    """``DAGSTER_HOME: FILES: ERROR`` when ``exc`` is Dagster's SQLite storage failing on
    its disk (full, read-only, gone): SQLAlchemy names no file, so the line names the
    SQLite files DAGSTER_HOME holds."""
    home = os.environ.get("DAGSTER_HOME")
    origin = getattr(exc, "orig", None)
    if not home or not type(exc).__module__.startswith("sqlalchemy") or origin is None:
        return None
    if type(origin).__module__ != "sqlite3":
        return None
    error = one_line(str(origin))
    if not error.lower().startswith(_SQLITE_DISK_FAULTS):
        return None
    root = Path(home).expanduser().resolve()
    files = sorted(p.relative_to(root).as_posix() for p in root.glob("*/*.db"))
    return f"DAGSTER_HOME: {', '.join(files) or '.'}: {error}"


def store_fault_line(exc: BaseException) -> str | None:
    """The one line of a store or DAGSTER_HOME fault (``the store: FILE: ERROR``, the file
    relative to where it lives), or None when ``exc`` is no such fault."""
    if isinstance(exc, StoreFault):
        return str(exc)
    if not isinstance(exc, OSError):
        return dagster_home_fault(exc)
    filename = exc.filename
    error = exc.strerror or type(exc).__name__
    if filename is not None:
        path = Path(os.fsdecode(filename)).expanduser().absolute()
        for name, root in _homes():
            if path == root or root in path.parents:
                shown = path.relative_to(root).as_posix() if path != root else "."
                return f"{name}: {shown}: {error}"
    if exc.errno in FAULT_ERRNOS:
        where = "" if filename is None else f"{os.fsdecode(filename)}: "
        return f"the store could not be written: {where}{error}"
    return None


def report_error(exc: BaseException, *, debug: bool) -> int:
    """Print ``exc`` as one line (plus the traceback with ``debug``); return the exit code."""
    if isinstance(exc, SystemExit):
        # --help and --version exit through SystemExit; pass their code on.
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    if isinstance(exc, BrokenPipeError):
        # `ragproof show RUN | head`: the reader left; not an error worth a traceback.
        sys.stderr.close()
        return EXIT_OK
    if isinstance(exc, KeyboardInterrupt):
        print("ragproof: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    fault = store_fault_line(exc)
    if fault is not None:
        print(f"ragproof: {one_line(fault)}", file=sys.stderr)
        return EXIT_STORE_FAULT
    if isinstance(exc, USER_ERRORS):
        print(user_message(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    print(internal_message(exc), file=sys.stderr)
    return EXIT_INTERNAL
