"""`ragproof compare`: paired per-metric comparison of two stored runs."""

from __future__ import annotations

import argparse
import sys

from ragproof_assets.cli.common import EXIT_BAD_INPUT, EXIT_OK, open_store, print_json


def cmd_compare(args: argparse.Namespace) -> int:
    from ragproof_core.compare.report import MixedJudgesError, RunSide, compare_runs

    store = open_store()
    sides = [
        RunSide(store.get_run(r), store.case_results_frame(r)) for r in (args.run_a, args.run_b)
    ]
    try:
        comparison = compare_runs(*sides, allow_mixed_judges=args.allow_mixed_judges)
    except MixedJudgesError as exc:
        print(
            f"ragproof: refusing to compare: {exc}; pass --allow-mixed-judges to compare anyway",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if args.json:
        print_json(comparison.to_dict())
    else:
        print(comparison.render_table())
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser("compare", help="paired comparison of two runs")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--allow-mixed-judges", action="store_true")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=cmd_compare)
