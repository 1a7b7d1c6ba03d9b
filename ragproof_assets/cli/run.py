"""`ragproof run`, `ragproof runs` and `ragproof show` (CONTRACT sections 5 and 9).

`ragproof run` materializes the evaluation assets through the `evaluate` job
against the persistent Dagster instance, so a command-line run is a Dagster
run like any launched from the UI; the command only validates its arguments
first and prints what the assets stored.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from ragproof_assets.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_BUDGET,
    EXIT_OK,
    open_store,
    print_json,
)
from ragproof_core.dataset import load_dataset
from ragproof_core.report import refusal_tradeoff, run_json, summary_table
from ragproof_core.settings import SOURCE_MATCHES, JudgeEnv, load_config


def _metric_patterns(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _run_config(args: argparse.Namespace) -> dict:
    fields = {
        "dataset": args.dataset,
        "config_file": args.config,
        "adapter": args.adapter,
        "k": args.k,
        "source_match": args.source_match,
        "metrics": None if args.metrics is None else list(_metric_patterns(args.metrics)),
        "shards": args.shards,
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
        k=args.k,
        source_match=args.source_match,
        adapter=args.adapter,
        metrics=_metric_patterns(args.metrics),
        shards=args.shards,
    )
    cases = load_dataset(args.dataset)
    if args.dry_run:
        from ragproof_core.dry_run import estimate_run

        estimate = asyncio.run(
            estimate_run(cases, config, JudgeEnv.from_env(), open_store().layout.judge_cache_path)
        )
        print_json(estimate.to_dict()) if args.json else print(estimate.render())
        return EXIT_OK

    from ragproof_assets.execution import execute_evaluation
    from ragproof_assets.instance import open_instance_with_partition
    from ragproof_assets.partitions import evaluation_runs
    from ragproof_core.store.layout import new_run_id

    run_id = new_run_id()
    instance = open_instance_with_partition(evaluation_runs.name, run_id)
    # One shard runs in this process; more run as parallel step processes.
    result = execute_evaluation(
        instance,
        run_id,
        run_config={
            "ops": {"eval_dataset": {"config": _run_config(args)}},
            "loggers": {"console": {"config": {"log_level": "WARNING"}}},
        },
        shards=config.run.shards,
        tags={"ragproof/source": "cli"},
    )
    if not result.success:
        for message in _failure_messages(result):
            print(f"ragproof: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT

    store = open_store()
    record = store.get_run(run_id)
    summaries = store.summaries(run_id)
    if args.json:
        print_json(run_json(run_id, record.status, summaries, record.judge_activity()))
    else:
        print(f"run {run_id}: {record.status}, {record.cases} cases, {config.adapter.target}")
        _print_summary(record, summaries)
    return EXIT_BUDGET if record.status == "aborted:budget" else EXIT_OK


def _print_summary(record, summaries) -> None:
    print(summary_table(summaries))
    tradeoff = refusal_tradeoff(summaries)
    if tradeoff:
        print(tradeoff)
    if record.judge_model is None:
        print(
            "judge: none (judge metrics skipped: set RAGPROOF_JUDGE_MODEL); "
            f"case failures {record.case_failures}"
        )
        return
    print(
        f"judge: {record.judge_model} ({record.judge_mode or 'per_metric'}); "
        f"requests {record.judge_requests} ({record.judge_repairs} repairs), "
        f"cache hits {record.cache_hits}, judge errors {record.judge_errors}, "
        f"tokens {record.judge_input_tokens} in / {record.judge_output_tokens} out, "
        f"cost ${record.cost_usd:.4f}; case failures {record.case_failures}"
    )


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
    records = open_store().list_runs()
    if args.json:
        print_json([_record_dict(r) for r in records])
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
    store = open_store()
    record = store.get_run(args.run_id)
    summaries = store.summaries(args.run_id)
    if args.json:
        print_json(
            {
                **run_json(record.run_id, record.status, summaries, record.judge_activity()),
                "run": _record_dict(record),
            }
        )
        return EXIT_OK
    print(f"run {record.run_id}: {record.status}, {record.cases} cases")
    print(f"dataset {record.dataset}; adapter {record.adapter}")
    _print_summary(record, summaries)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="evaluate a dataset (one Dagster run, one partition)")
    run.add_argument("--dataset", required=True, help="dataset file, JSON Lines or Parquet")
    run.add_argument("--config", help="ragproof.toml")
    run.add_argument("--adapter", help="adapter as package.module:Name")
    run.add_argument("--k", type=int, help="run.k for the retrieval metrics")
    run.add_argument("--source-match", choices=SOURCE_MATCHES, help="run.source_match")
    run.add_argument(
        "--metrics",
        help="run.metrics: comma-separated metric names or shell-style patterns, "
        "e.g. 'retrieval.*,generation.groundedness' (quote patterns in a shell)",
    )
    run.add_argument("--shards", type=int, help="run.shards: split the cases into N steps")
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
