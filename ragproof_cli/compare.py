"""`ragproof compare`: paired per-metric comparison of two stored runs."""

from __future__ import annotations

import argparse
import sys

from ragproof_cli.common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_REGRESSION,
    UsageError,
    all_metrics_flag,
    open_store,
    print_json,
    warn_damaged,
)
from ragproof_cli.errors import mixed_judges_refusal, mixed_settings_refusal
from ragproof_core.compare import (
    CORRECTIONS,
    HOLM,
    MixedJudgesError,
    MixedSettingsError,
    broken,
    check_floors,
    compare_stored_runs,
    describe,
    floors_for,
    regressions,
)
from ragproof_core.metrics import stored_registry
from ragproof_core.present import render_markdown


def cmd_compare(args: argparse.Namespace) -> int:
    if args.margin < 0:
        raise UsageError(f"--margin must be at least 0, got {args.margin:g}")
    fmt = "json" if args.json else args.format
    store = open_store()
    for run_id in (args.run_a, args.run_b):
        store.require_intact(run_id)
    warn_damaged(store, (args.run_a, args.run_b))
    records = [store.get_run(r) for r in (args.run_a, args.run_b)]
    try:
        comparison = compare_stored_runs(
            store,
            *records,
            allow_mixed_judges=args.allow_mixed_judges,
            registry=stored_registry(*(record.config_json for record in records)),
            allow_mixed_settings=args.allow_mixed_settings,
            correction=args.correction,
        )
    except MixedJudgesError as exc:
        print(mixed_judges_refusal(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except MixedSettingsError as exc:
        print(mixed_settings_refusal(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    # B's floors (CONTRACT section 25): those of --config, else those B was run with.
    floors = check_floors(
        store, records[1].run_id, floors_for(store, records[1].run_id, args.config)
    )
    if fmt == "json":
        print_json({**comparison.to_dict(), "floors": [r.to_dict() for r in floors]})
    elif fmt == "markdown":
        print(
            render_markdown(
                comparison, margin=args.margin, floors=floors, all_metrics=args.all_metrics
            ),
            end="",
        )
    else:
        print(comparison.render_table(args.all_metrics))
        if floors:
            print(f"\nfloors of B ({records[1].run_id}):")
            for result in floors:
                print(result.line())
    if not args.fail_on_regression:
        return EXIT_OK
    worse = regressions(comparison, margin=args.margin)
    failed = broken(floors)
    for result in failed:
        print(f"ragproof: floor broken: {result.line().removeprefix('FAIL  ')}", file=sys.stderr)
    for metric in worse:
        print(f"ragproof: regression: {describe(metric)}", file=sys.stderr)
    return EXIT_REGRESSION if worse or failed else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser("compare", help="paired comparison of two runs")
    compare.add_argument("run_a", help="baseline run")
    compare.add_argument("run_b", help="run compared against the baseline")
    compare.add_argument(
        "--allow-mixed-judges",
        action="store_true",
        help="compare runs judged by different models, prompts or modes (flagged in the output)",
    )
    compare.add_argument(
        "--allow-mixed-settings",
        action="store_true",
        help="compare runs scored with different run.k or run.source_match (flagged in the output)",
    )
    compare.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default=HOLM,
        help="adjust each metric's p for the number of metrics tested before the regression "
        "gate reads it: holm (default, Holm's step-down) or none",
    )
    compare.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="markdown: GitHub-flavoured, for a PR comment or $GITHUB_STEP_SUMMARY",
    )
    compare.add_argument("--json", action="store_true", help="same as --format json")
    all_metrics_flag(compare)
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 4 when a metric of B is significantly worse (adjusted p < 0.05, see "
        "--correction) than A by more than --margin, or B breaks a floor (see --config)",
    )
    compare.add_argument(
        "--margin", type=float, default=0.0, help="tolerated worsening (default 0)"
    )
    compare.add_argument(
        "--config",
        metavar="FILE",
        help="apply the floors of this ragproof.toml's [gate] table to B (default: the floors "
        "B was run with); with --fail-on-regression a broken floor exits 4 too",
    )
    compare.set_defaults(func=cmd_compare)
