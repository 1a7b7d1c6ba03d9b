"""`ragproof report`: one self-contained HTML report of a stored run (CONTRACT section 10)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragproof_cli.common import EXIT_BAD_INPUT, EXIT_OK, open_store, warn_damaged
from ragproof_cli.errors import mixed_judges_refusal
from ragproof_core.present import MixedJudgesError, gather_report, render_html, write_html


def cmd_report(args: argparse.Namespace) -> int:
    store = open_store()
    named = tuple(r for r in (args.run_id, args.against) if r)
    for run_id in named:
        store.require_intact(run_id)
    warn_damaged(store, named)
    try:
        data = gather_report(
            store, args.run_id, against=args.against, allow_mixed_judges=args.allow_mixed_judges
        )
    except MixedJudgesError as exc:
        print(mixed_judges_refusal(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.out:
        print(write_html(Path(args.out), data).resolve())
    else:
        print(store.write_report(args.run_id, render_html(data), args.against))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="write a run's self-contained HTML report")
    report.add_argument("run_id", metavar="RUN_ID", help="the run to report on (see ragproof runs)")
    report.add_argument("--against", metavar="RUN_ID", help="baseline run to compare with")
    report.add_argument("--out", metavar="FILE", help="where to write (default: in the store)")
    report.add_argument(
        "--allow-mixed-judges",
        action="store_true",
        help="compare with a baseline judged differently (flagged in the report)",
    )
    report.set_defaults(func=cmd_report)
