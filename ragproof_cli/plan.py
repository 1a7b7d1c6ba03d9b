"""`ragproof plan`: cases needed per metric to detect a change (CONTRACT section 12)."""

from __future__ import annotations

import argparse

from ragproof_cli.common import EXIT_OK, UsageError, open_store, print_json
from ragproof_core.compare import plan_run


def cmd_plan(args: argparse.Namespace) -> int:
    if not args.delta > 0:
        raise UsageError(f"--delta must be a positive change in score, got {args.delta:g}")
    store = open_store()
    store.get_run(args.run)  # RunNotFound (exit 1) for an unknown or unfinished run
    plan = plan_run(args.run, store.case_results_frame(args.run), args.delta)
    print_json(plan.to_dict()) if args.json else print(plan.render_table())
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    plan = sub.add_parser(
        "plan",
        help="cases needed to detect a change of --delta, per metric",
        description="Per metric, the cases needed to detect a change of DELTA at two-sided "
        "alpha 0.05 and 80% power: ceil(((1.96 + 0.8416) * sd / DELTA)^2), with sd the "
        "run's per-case standard deviation of that metric. This is an unpaired-difference "
        "bound; the paired one (the same cases in both runs, as compare uses) is usually "
        "smaller. A run with repeats (run.repeats) gives the cases needed by trials a case "
        "from its within- and between-case spreads, and per metric the fewest trials a case "
        "with which the run's own cases detect DELTA, or the cases it needs when no number "
        "of trials is enough.",
    )
    plan.add_argument("--run", required=True, metavar="RUN_ID", help="a stored run")
    plan.add_argument("--delta", required=True, type=float, help="the change to detect, e.g. 0.05")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(func=cmd_plan)
