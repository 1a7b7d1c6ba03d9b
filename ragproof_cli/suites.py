"""`ragproof suites check [--file PATH]`: read suites.toml as ragproof's code location
reads it when it loads (CONTRACT section 30), without Dagster: each suite and its
schedule, or the one line the location's load would fail with (exit 1)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragproof_cli.errors import EXIT_OK
from ragproof_core.config import Suite, load_suites, suites_file


def describe_suite(suite: Suite) -> str:
    """One line: the suite, its dataset, its schedule and what it keeps."""
    when = f"{suite.schedule_cron} {suite.timezone}"
    schedule = f"running ({when})" if suite.scheduled else f"stopped until turned on ({when})"
    kept = "" if suite.keep_last is None else f", keep_last {suite.keep_last}"
    return f"ragproof_{suite.name}: {suite.launch['dataset']}, {schedule}{kept}"


def cmd_suites_check(args: argparse.Namespace) -> int:
    for suite in load_suites(Path(args.file) if args.file else suites_file()):
        print(describe_suite(suite))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    suites = sub.add_parser("suites", help="check suites.toml: each suite and its schedule")
    actions = suites.add_subparsers(dest="suites_command", required=True)
    check = actions.add_parser(
        "check",
        help="read suites.toml as the code location does: one line per suite and its "
        "schedule, or the first mistake (exit 1)",
    )
    check.add_argument(
        "--file", help="the suites file (default: $RAGPROOF_SUITES, else data/suites.toml)"
    )
    check.set_defaults(func=cmd_suites_check)
