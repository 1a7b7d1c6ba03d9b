"""`ragproof verify [--repair] [--json]` (CONTRACT section 29): the whole store read
against its catalog, one line per problem; exit 5 when there is any (none left after
``--repair``), else 0."""

from __future__ import annotations

import argparse

from ragproof_cli.common import EXIT_OK, EXIT_STORE_FAULT, open_store, print_json
from ragproof_core.store.verify import verify_store


def cmd_verify(args: argparse.Namespace) -> int:
    store = open_store()
    report = verify_store(store, repair=args.repair)
    if args.json:
        print_json(report.to_json())
    else:
        for problem in report.problems:
            print(problem.line())
        print(
            f"{report.runs} runs, {report.files} files ({report.bytes} bytes) checked: "
            + (
                "no problem"
                if not report.problems
                else f"{len(report.problems)} problem(s)"
                + (", all repaired" if report.ok and args.repair else "")
            )
        )
    return EXIT_OK if report.ok else EXIT_STORE_FAULT


def register(sub: argparse._SubParsersAction) -> None:
    verify = sub.add_parser(
        "verify", help="check every run's files, the judge cache and the views; --repair fixes"
    )
    verify.add_argument(
        "--repair",
        action="store_true",
        help="move damaged runs and an unreadable cache to quarantine/, remove leftovers, "
        "rebuild the views",
    )
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.set_defaults(func=cmd_verify)
