"""`ragproof gc` (CONTRACT section 31): runs beyond the newest N, or older than a number
of days, removed from the store and from Dagster together; the bytes freed printed."""

from __future__ import annotations

import argparse

from ragproof_cli.common import EXIT_OK, UsageError, open_store, print_json
from ragproof_core.gc_pause import imports_paused
from ragproof_core.store.retention import Retention, collect_garbage, parse_tags


def _forget_in_dagster(run_id: str) -> None:
    # Imported here: the Dagster half takes seconds to import, and a gc that removes
    # nothing (or a dry run) never needs it.
    with imports_paused():
        from ragproof_cli import execution

    execution.forget_partition(run_id)


def cmd_gc(args: argparse.Namespace) -> int:
    try:
        policy = Retention(
            keep_last=args.keep_last,
            older_than_days=args.older_than,
            suite=args.suite,
            name=args.name,
            tags=parse_tags(args.tag or ()),
        )
    except ValueError as exc:
        raise UsageError(f"gc: {exc}") from None
    report = collect_garbage(
        open_store(),
        policy,
        dry_run=args.dry_run,
        force=args.force,
        forget=None if args.dry_run else _forget_in_dagster,
    )
    if args.json:
        print_json(report.to_json())
        return EXIT_OK
    verb = "would remove" if args.dry_run else "removed"
    for run in report.removed:
        print(f"{verb} {run.run_id} ({run.status}, {run.bytes} bytes)")
    for run in report.kept:
        print(f"kept {run.run_id} ({run.status}): {run.kept_because}")
    freed = "would free" if args.dry_run else "freed"
    print(f"{len(report.removed)} run(s) {verb}, {report.bytes_freed} bytes {freed}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    gc = sub.add_parser("gc", help="remove old runs from the store and from Dagster together")
    which = gc.add_mutually_exclusive_group(required=True)
    which.add_argument("--keep-last", type=int, metavar="N", help="keep the newest N runs")
    which.add_argument(
        "--older-than", type=float, metavar="DAYS", help="remove runs started DAYS ago or more"
    )
    gc.add_argument("--suite", help="only the runs of this suite (tag suite=NAME)")
    gc.add_argument("--name", help="only the runs of this name")
    gc.add_argument("--tag", action="append", metavar="KEY=VALUE", help="only runs tagged so")
    gc.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    gc.add_argument(
        "--force",
        action="store_true",
        help="remove runs with labels, calibrations or probes too (never a running run)",
    )
    gc.add_argument("--json", action="store_true", help="print the report as JSON")
    gc.set_defaults(func=cmd_gc)
