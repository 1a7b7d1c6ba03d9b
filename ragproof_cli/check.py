"""`ragproof check`: a run against the floors of its gate (CONTRACT section 25)."""

from __future__ import annotations

import argparse
import sys

from ragproof_cli.common import EXIT_OK, EXIT_REGRESSION, open_store, print_json
from ragproof_core.compare import broken, check_floors, required_floors


def cmd_check(args: argparse.Namespace) -> int:
    store = open_store()
    record = store.get_run(args.run_id)  # an unknown or unfinished run is bad input
    floors = required_floors(store, record.run_id, args.config)
    results = check_floors(store, record.run_id, floors)
    failed = broken(results)
    if args.json:
        print_json(
            {
                "run_id": record.run_id,
                "passed": not failed,
                "floors": [r.to_dict() for r in results],
            }
        )
    else:
        for result in results:
            print(result.line())
    if failed:
        print(
            f"ragproof: {len(failed)} of {len(results)} floors broken: "
            + ", ".join(r.metric for r in failed),
            file=sys.stderr,
        )
        return EXIT_REGRESSION
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        "check", help="apply the floors of a [gate] table to a run: exit 4 when one is broken"
    )
    check.add_argument("run_id", metavar="RUN_ID", help="the run to check (see ragproof runs)")
    check.add_argument(
        "--config",
        metavar="FILE",
        help="the ragproof.toml whose [gate] table to apply (default: the run's own)",
    )
    check.add_argument("--json", action="store_true", help="print the results as JSON")
    check.set_defaults(func=cmd_check)
