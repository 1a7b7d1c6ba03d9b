"""The `ragproof` command line (CONTRACT section 5).

`ragproof run` materializes the evaluation assets through the `evaluate` job
against the persistent Dagster instance, so a command-line run is a Dagster
run like any launched from the UI; the command only validates its arguments
first and prints what the assets stored. The other commands read the store.

Exit codes: 0 success; 1 bad input, failed calibration or a refused
comparison; 2 a run aborted on its budget.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ragproof_core.dataset import DatasetError, load_dataset
from ragproof_core.report import refusal_tradeoff, run_json, summary_table
from ragproof_core.robustness.generate import GenerationError
from ragproof_core.settings import SOURCE_MATCHES, ConfigError, JudgeEnv, load_config, store_root
from ragproof_core.store.run_store import RunNotFound, RunStore

EXIT_OK, EXIT_BAD_INPUT, EXIT_BUDGET = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: printed as is, exit 1."""


def _store() -> RunStore:
    return RunStore(store_root())


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=str))


# -- run ---------------------------------------------------------------------------------


def _run_config(args: argparse.Namespace) -> dict:
    fields = {
        "dataset": args.dataset,
        "config_file": args.config,
        "adapter": args.adapter,
        "k": args.k,
        "source_match": args.source_match,
        "no_cache": args.no_cache or None,
        # Only when a person is watching: the bar is drawn on the terminal.
        "progress": sys.stderr.isatty() or None,
    }
    return {k: v for k, v in fields.items() if v is not None}


def _failure_messages(result) -> list[str]:
    messages = []
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        data = event.step_failure_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            messages.append(data.user_failure_data.description)
        elif data.error is not None:
            messages.append(data.error.message.strip())
    return messages or ["the evaluation run failed; see the Dagster UI for its logs"]


def cmd_run(args: argparse.Namespace) -> int:
    # Validate before a partition is created, so bad input leaves no trace in the
    # store or the Dagster instance. The eval_dataset asset validates the same way.
    config = load_config(args.config).with_overrides(
        k=args.k, source_match=args.source_match, adapter=args.adapter
    )
    cases = load_dataset(args.dataset)
    if args.dry_run:
        from ragproof_core.dry_run import estimate_run

        estimate = asyncio.run(
            estimate_run(cases, config, JudgeEnv.from_env(), _store().layout.judge_cache_path)
        )
        _print_json(estimate.to_dict()) if args.json else print(estimate.render())
        return EXIT_OK

    from ragproof_assets.definitions import defs
    from ragproof_assets.instance import open_instance_with_partition
    from ragproof_assets.partitions import evaluation_runs
    from ragproof_core.store.layout import new_run_id

    run_id = new_run_id()
    instance = open_instance_with_partition(evaluation_runs.name, run_id)
    job = defs.resolve_job_def("evaluate")
    result = job.execute_in_process(
        run_config={
            "ops": {"eval_dataset": {"config": _run_config(args)}},
            "loggers": {"console": {"config": {"log_level": "WARNING"}}},
        },
        instance=instance,
        partition_key=run_id,
        raise_on_error=False,
        tags={"ragproof/source": "cli"},
    )
    if not result.success:
        for message in _failure_messages(result):
            print(f"ragproof: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT

    store = _store()
    record = store.get_run(run_id)
    summaries = store.summaries(run_id)
    if args.json:
        _print_json(run_json(run_id, record.status, summaries))
    else:
        print(f"run {run_id}: {record.status}, {record.cases} cases, {config.adapter.target}")
        _print_summary(record, summaries)
    return EXIT_BUDGET if record.status == "aborted:budget" else EXIT_OK


def _print_summary(record, summaries) -> None:
    print(summary_table(summaries))
    tradeoff = refusal_tradeoff(summaries)
    if tradeoff:
        print(tradeoff)
    judge = record.judge_model or "none (judge metrics skipped: set RAGPROOF_JUDGE_MODEL)"
    print(
        f"judge: {judge}; requests {record.judge_requests}, cache hits {record.cache_hits}, "
        f"cost ${record.cost_usd:.4f}; case failures {record.case_failures}"
    )


# -- runs, show --------------------------------------------------------------------------


def _record_dict(record) -> dict:
    return {
        "run_id": record.run_id,
        "dataset": record.dataset,
        "adapter": record.adapter,
        "status": record.status,
        "started_at": record.started_at.isoformat(),
        "finished_at": record.finished_at.isoformat(),
        "judge_model": record.judge_model,
        "prompt_hashes": record.prompt_hashes,
        "cost_usd": record.cost_usd,
        "cases": record.cases,
        "case_failures": record.case_failures,
    }


def cmd_runs(args: argparse.Namespace) -> int:
    records = _store().list_runs()
    if args.json:
        _print_json([_record_dict(r) for r in records])
        return EXIT_OK
    if not records:
        print("no runs stored yet")
        return EXIT_OK
    for r in records:
        print(
            f"{r.run_id}  {r.status:<15} {r.cases:>6} cases  ${r.cost_usd:.4f}  "
            f"{r.dataset}  {r.adapter}"
        )
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    store = _store()
    record = store.get_run(args.run_id)
    summaries = store.summaries(args.run_id)
    if args.json:
        _print_json(
            {**run_json(record.run_id, record.status, summaries), "run": _record_dict(record)}
        )
        return EXIT_OK
    print(f"run {record.run_id}: {record.status}, {record.cases} cases")
    print(f"dataset {record.dataset}; adapter {record.adapter}")
    _print_summary(record, summaries)
    return EXIT_OK


# -- compare, calibrate, generate -------------------------------------------------------------


def cmd_compare(args: argparse.Namespace) -> int:
    from ragproof_core.compare.report import MixedJudgesError, RunSide, compare_runs

    store = _store()
    sides = [
        RunSide(store.get_run(r), store.case_results_frame(r)) for r in (args.run_a, args.run_b)
    ]
    try:
        comparison = compare_runs(*sides, allow_mixed_judges=args.allow_mixed_judges)
    except MixedJudgesError as exc:
        print(f"ragproof: refusing to compare: {exc}", file=sys.stderr)
        print("ragproof: pass --allow-mixed-judges to compare anyway", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        _print_json(comparison.to_dict())
    else:
        print(comparison.render_table())
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ragproof_core.judge.calibrate import calibrate
    from ragproof_core.judge.session import make_judge
    from ragproof_core.judge.types import BudgetExceeded

    judge = make_judge(
        JudgeEnv.from_env(),
        _store().layout.judge_cache_path,
        use_cache=not args.no_cache,
    )
    if judge is None:
        raise UsageError("calibrate needs a judge: set RAGPROOF_JUDGE_MODEL")

    async def run():
        try:
            return await calibrate(judge, exact_threshold=args.exact, within_threshold=args.within)
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
    finally:
        judge.close()
    if args.json:
        _print_json(report.to_dict())
    else:
        print(report.render_table())
    return EXIT_OK if report.passed else EXIT_BAD_INPUT


def cmd_generate_injection(args: argparse.Namespace) -> int:
    from ragproof_core.robustness.generate import generate_command

    payloads = [p.strip() for p in args.payloads.split(",")] if args.payloads else None
    print(
        generate_command(
            Path(args.dataset),
            Path(args.out),
            payloads,
            args.count,
            args.seed,
            Path(args.documents_out) if args.documents_out else None,
        )
    )
    return EXIT_OK


# -- parsing -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragproof", description="Evaluate RAG pipelines.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="evaluate a dataset (one Dagster run, one partition)")
    run.add_argument("--dataset", required=True, help="dataset file, JSON Lines or Parquet")
    run.add_argument("--config", help="ragproof.toml")
    run.add_argument("--adapter", help="adapter as package.module:Name")
    run.add_argument("--k", type=int, help="run.k for the retrieval metrics")
    run.add_argument("--source-match", choices=SOURCE_MATCHES, help="run.source_match")
    run.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    run.add_argument("--dry-run", action="store_true", help="estimate judge calls and cost only")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.set_defaults(func=cmd_run)

    runs = sub.add_parser("runs", help="list stored runs")
    runs.add_argument("--json", action="store_true")
    runs.set_defaults(func=cmd_runs)

    show = sub.add_parser("show", help="one run's summary")
    show.add_argument("run_id")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_show)

    compare = sub.add_parser("compare", help="paired comparison of two runs")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--allow-mixed-judges", action="store_true")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(func=cmd_compare)

    calibrate = sub.add_parser("calibrate", help="judge agreement with human-scored fixtures")
    calibrate.add_argument("--exact", type=float, default=0.70, help="exact-agreement threshold")
    calibrate.add_argument("--within", type=float, default=0.90, help="within-band threshold")
    calibrate.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    calibrate.add_argument("--json", action="store_true")
    calibrate.set_defaults(func=cmd_calibrate)

    generate = sub.add_parser("generate", help="generate adversarial cases")
    gen_sub = generate.add_subparsers(dest="what", required=True)
    injection = gen_sub.add_parser("injection", help="prompt-injection cases from a dataset")
    injection.add_argument("--dataset", required=True)
    injection.add_argument("--out", required=True)
    injection.add_argument("--payloads", help="comma-separated payload ids (default: all)")
    injection.add_argument("--count", type=int, help="number of cases (default: all pairs)")
    injection.add_argument("--seed", type=int, default=0)
    injection.add_argument(
        "--documents-out", help="also write indirect-injection documents for your index"
    )
    injection.set_defaults(func=cmd_generate_injection)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Like uvicorn: `--adapter mymodule:RAG` finds mymodule in the working folder.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return args.func(args)
    except (DatasetError, ConfigError, UsageError, GenerationError) as exc:
        print(
            f"ragproof: {exc}" if not isinstance(exc, DatasetError) else str(exc), file=sys.stderr
        )
        return EXIT_BAD_INPUT
    except RunNotFound as exc:
        print(f"ragproof: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # `ragproof show RUN | head`: the reader left; not an error worth a traceback.
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
