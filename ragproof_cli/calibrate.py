"""`ragproof calibrate`: judge agreement with the human-scored fixtures (in the
configured judge mode), bias-corrected means from human labels of a run
(``--run RUN_ID --labels FILE``), and a sample of a run's cases to label
(``--sample N --run RUN_ID --out FILE``); CONTRACT sections 5 and 12."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragproof_cli.common import (
    EXIT_BAD_INPUT,
    EXIT_BUDGET,
    EXIT_JUDGE_UNAVAILABLE,
    EXIT_OK,
    UsageError,
    judge_unavailable_line,
    open_store,
    print_json,
)
from ragproof_core.calibration import (
    FixtureError,
    LabelsError,
    calibrate,
    calibrate_combined,
    calibrate_run,
    calibrate_stored,
    load_metric_fixtures,
    read_labels,
    sample_for_labelling,
)
from ragproof_core.config import load_config
from ragproof_core.judge import (
    JUDGE_MODES,
    BudgetExceeded,
    JudgeUnavailable,
    check_credentials,
    judge_environment,
    make_judge,
)
from ragproof_core.metrics import custom_metric, give_rubrics, stored_registry
from ragproof_core.store import StoreLocked, write_json_lines


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.sample is not None:
        return _sample(args)
    if args.labels is not None or args.run is not None:
        return _labels(args)
    return _fixtures(args)


def _fixtures(args: argparse.Namespace) -> int:
    env = judge_environment()
    if args.mode is not None:
        env = replace(env, mode=args.mode, mode_from_env=args.mode)
    extra = _rubric_fixtures(args.config)
    check_credentials(env)  # before the store's cache is opened
    judge = make_judge(env, open_store().layout.judge_cache_path, use_cache=not args.no_cache)
    if judge is None:
        raise UsageError("calibrate needs a judge: set RAGPROOF_JUDGE_MODEL")
    give_rubrics(judge, [table for table, _ in extra])
    rubrics = [(custom_metric(table), fixtures) for table, fixtures in extra]

    async def run():
        try:
            if judge.mode == "combined":
                return await calibrate_combined(
                    judge,
                    exact_threshold=args.exact,
                    within_threshold=args.within,
                    extra=rubrics,
                )
            return await calibrate(
                judge, exact_threshold=args.exact, within_threshold=args.within, extra=rubrics
            )
        finally:
            await judge.drain()

    try:
        report = asyncio.run(run())
    except BudgetExceeded:
        print(
            "ragproof: calibration stopped at the judge budget (RAGPROOF_MAX_COST_USD)",
            file=sys.stderr,
        )
        return EXIT_BUDGET
    except JudgeUnavailable as exc:
        print(judge_unavailable_line(str(exc)), file=sys.stderr)
        return EXIT_JUDGE_UNAVAILABLE
    finally:
        judge.close()
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.render_table())
    return EXIT_OK if report.passed else EXIT_BAD_INPUT


def _rubric_fixtures(config: str | None) -> list[tuple[Any, list[Any]]]:
    """The rubric metrics of ``--config`` that name fixtures (``MetricTable``), with their
    fixtures loaded."""

    if config is None:
        return []
    found = []
    for table in load_config(config).metrics:
        if table.rubric is not None and table.fixtures is not None:
            try:
                found.append((table, load_metric_fixtures(table.fixtures, table.name)))
            except FixtureError as exc:
                raise UsageError(exc.problems[0]) from None
    if not found:
        raise UsageError(f"{config}: no [[metric]] table with a rubric and fixtures to calibrate")
    return found


def _labels(args: argparse.Namespace) -> int:
    if args.run is None:
        raise UsageError("calibrate --labels FILE needs --run RUN_ID")
    store = open_store()
    store.get_run(args.run)  # RunNotFound (exit 1) for an unknown or unfinished run
    if args.labels is None:
        # The labels people stored with `ragproof label` (CONTRACT section 22).
        calibration = calibrate_stored(
            args.run, store.case_results_frame(args.run), store.labels(args.run)
        )
        store.write_calibration(calibration, labels_file=None)
    else:
        # The run's own metrics ([[metric]] tables) are labelled like the shipped ones.
        known = stored_registry(store.get_run(args.run).config_json).all_names
        try:
            labels = read_labels(args.labels, known)
        except LabelsError as exc:
            raise UsageError(str(exc)) from None
        calibration = calibrate_run(args.run, store.case_results_frame(args.run), labels)
        store.write_calibration(calibration, labels_file=str(Path(args.labels).resolve()))
    # Locked views are no loss: they glob every calibration file once refreshed.
    with contextlib.suppress(StoreLocked):
        store.ensure_views(timeout_s=5)
    if args.json:
        print_json(calibration.to_dict())
    else:
        print(calibration.render_table())
    return EXIT_OK


def _sample(args: argparse.Namespace) -> int:
    if args.run is None or args.out is None:
        raise UsageError("calibrate --sample N needs --run RUN_ID and --out FILE")
    if args.labels is not None:
        raise UsageError("calibrate: --sample and --labels do not go together")
    if args.sample < 1:
        raise UsageError(f"--sample must be at least 1, got {args.sample}")
    store = open_store()
    store.get_run(args.run)
    lines = sample_for_labelling(
        store.case_results_frame(args.run),
        store.read_dataset(args.run),
        store.read_outputs(args.run),
        args.sample,
        args.seed,
    )
    out = Path(args.out)
    if out.parent != Path() and not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    text = "".join(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n" for line in lines)
    write_json_lines(out, text)
    metrics = len({line["metric"] for line in lines})
    print(f"wrote {len(lines)} line(s) over {metrics} judge metric(s) to {out}", file=sys.stderr)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    calibrate = sub.add_parser(
        "calibrate",
        help="judge agreement with human-scored fixtures, or bias-corrected means from labels",
        description="Without --run: the judge's agreement with the shipped human-scored "
        "fixtures, in the configured judge mode (exit 1 below thresholds). With --run: "
        "judge-only, human-only and bias-corrected (PPI) means of the run's judge metrics "
        "from human labels (--labels FILE, else the labels stored with `ragproof label`, "
        "with the annotators' agreement beside the judge's), stored for show and report. "
        "With --sample N --run --out: a seeded sample of N judge-scored cases per judge "
        "metric to label.",
    )
    calibrate.add_argument("--exact", type=float, default=0.70, help="exact-agreement threshold")
    calibrate.add_argument("--within", type=float, default=0.90, help="within-band threshold")
    calibrate.add_argument(
        "--mode", choices=JUDGE_MODES, help="judge mode to calibrate (default: configured)"
    )
    calibrate.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    calibrate.add_argument(
        "--config",
        metavar="FILE",
        help="also calibrate this ragproof.toml's rubric metrics on their fixtures files",
    )
    calibrate.add_argument("--run", metavar="RUN_ID", help="a stored run")
    calibrate.add_argument(
        "--labels",
        metavar="FILE",
        help='JSON Lines {"case_id", "metric", "score"} of human scores (default with --run: '
        "the labels stored with `ragproof label`)",
    )
    calibrate.add_argument(
        "--sample", type=int, metavar="N", help="write N judge-scored cases per metric to label"
    )
    calibrate.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    calibrate.add_argument("--out", metavar="FILE", help="where --sample writes")
    calibrate.add_argument("--json", action="store_true", help="print the result as JSON")
    calibrate.set_defaults(func=cmd_calibrate)
