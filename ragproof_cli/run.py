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
from collections.abc import Callable

from ragproof_cli.common import (
    EXIT_BAD_INPUT,
    EXIT_BUDGET,
    EXIT_INTERNAL,
    EXIT_JUDGE_UNAVAILABLE,
    EXIT_OK,
    EXIT_STORE_FAULT,
    UsageError,
    all_metrics_flag,
    judge_unavailable_line,
    open_store,
    print_json,
    stdout_to_stderr,
    warn_damaged,
)
from ragproof_cli.errors import DEBUG_HINT, one_line
from ragproof_core.adapters.runner import adapter_calls_line
from ragproof_core.config import (
    RUN_KEYS,
    parse_tag,
    run_key_choices,
    run_key_help,
    run_key_type,
)
from ragproof_core.gc_pause import imports_paused
from ragproof_core.judge import ABORTED_BUDGET, ABORTED_JUDGE, format_usd
from ragproof_core.masking import secrets_line
from ragproof_core.present import (
    agreement_lines,
    calibration_json,
    calibration_table,
    case_text,
    gather_case,
    hidden_note,
    identity_line,
    judge_failures_line,
    judge_usage_table,
    latency_note,
    refusal_tradeoff,
    run_dict,
    run_json,
    runs_table,
    stored_diagnosis,
    summary_table,
)
from ragproof_core.run import check_launch, estimate_run, preflight
from ragproof_core.store import stored_run_settings
from ragproof_core.store_health import STORE_FAULT

# CONTRACT section 31: `ragproof runs` lists the latest 50 by default.
DEFAULT_RUNS_LISTED = 50


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _tag(text: str) -> tuple[str, str]:
    try:
        return parse_tag(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def tag_flag(parser: argparse.ArgumentParser, help_text: str, dest: str = "tags") -> None:
    """``--tag KEY=VALUE``, repeatable: a table of strings given one entry at a time."""
    parser.add_argument(
        "--tag", dest=dest, type=_tag, action="append", metavar="KEY=VALUE", help=help_text
    )


def add_run_key_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per ``[run]`` key (``--k``, ``--source-match``, ...), from its declaration;
    a table of strings (``tags``) is one repeatable flag named for one entry (``--tag``)."""
    for name in RUN_KEYS:
        kind = run_key_type(name)
        help_text = f"run.{name}: {run_key_help(name)}"
        if kind is tuple:
            parser.add_argument(_flag(name), dest=name, type=_names, help=help_text)
        elif kind is dict:
            tag_flag(parser, f"{help_text}; repeatable", dest=name)
        else:
            parser.add_argument(
                _flag(name), dest=name, type=kind, choices=run_key_choices(name), help=help_text
            )


def cmd_run(args: argparse.Namespace) -> int:
    # The adapter runs in this process (and in step processes it starts): what it
    # prints goes to stderr, and stdout carries only the command's own output.
    with stdout_to_stderr():
        code, show = _execute_run(args)
    if show is not None:
        show()
    return code


def _execute_run(args: argparse.Namespace) -> tuple[int, Callable[[], None] | None]:
    """The run's exit code, and what to print on stdout (None: nothing)."""
    # The config, the judge's environment and a live adapter are checked before a
    # partition is created; the dataset step validates the dataset and a recording
    # before it stores anything, and a run it refuses is removed again.
    # Imported here: the Dagster layer takes seconds to import, and only `ragproof run`
    # needs it (runs, show, compare, report, sql and the rest start without it). Its
    # modules hold no garbage: the collector would only rescan them as they load.
    with imports_paused():
        from ragproof_cli import execution

    if args.resume is not None:
        form = execution.resume_form(args.resume, args.config)
    elif args.dataset is None:
        raise UsageError("run: the following arguments are required: --dataset")
    else:
        form = execution.launch_form(args)
    config = form.resolve()
    if args.dry_run:
        checked = preflight(config, args.dataset)

        estimate = asyncio.run(
            estimate_run(
                checked.cases,
                config,
                checked.judge_env,
                open_store().layout.judge_cache_path,
            )
        )
        if args.json:
            return EXIT_OK, lambda: print_json(estimate.to_dict())
        return EXIT_OK, lambda: print(estimate.render())
    # The cheap checks only: the dataset and a recording are read once, by the run's
    # dataset step, which stores nothing until both are valid.
    check_launch(config, form.dataset)
    # A store that cannot take the run fails it now, before any adapter or judge call.
    open_store().check_writable()
    run_id, result = execution.run_evaluation(
        form,
        config.run.shards,
        debug=args.debug,
        progress=execution.progress_where(notebook=False, terminal=sys.stderr.isatty()),
        resume=args.resume,
    )
    if not result.success:
        messages, internal = execution.step_failures(result)
        faulted = messages[0].startswith((STORE_FAULT, "DAGSTER_HOME: "))
        refused = not internal and not faulted
        if refused and not open_store().run_exists(run_id):
            # Refused on its input: nothing is stored, and the run leaves no trace.
            execution.forget_run(run_id, result)
        if internal:
            print(
                f"ragproof: internal error (a bug in ragproof): {one_line(messages[0])}; "
                f"{DEBUG_HINT}",
                file=sys.stderr,
            )
            return EXIT_INTERNAL, None
        print(f"ragproof: {one_line(messages[0])}", file=sys.stderr)
        if faulted:
            return EXIT_STORE_FAULT, None
        return EXIT_BAD_INPUT, None

    store = open_store()
    record = store.get_run(run_id)
    summaries = store.summaries(run_id)
    signum = store.stop_signal(run_id)
    if signum is not None and record.status == "interrupted":
        total = store.read_manifest(run_id).get("cases", record.cases)
        print(
            f"ragproof: interrupted: run {run_id} kept {record.cases} of {total} cases; "
            f"ragproof run --resume {run_id} continues it",
            file=sys.stderr,
        )
        return 128 + signum, None

    def show() -> None:
        diagnosis = stored_diagnosis(store, run_id, summaries)
        if args.json:
            shown = run_json(
                run_id,
                record.status,
                summaries,
                record.judge_activity(),
                record.adapter_calls,
                secrets_masked=record.secrets_masked,
            )
            print_json(_with_diagnosis(shown, diagnosis))
        else:
            print(f"run {run_id}: {record.status}, {record.cases} cases, {config.adapter.target}")
            _print_summary(record, summaries, args.all_metrics, diagnosis)

    if record.status == ABORTED_JUDGE:
        # The line first, on stderr: the summary of what was kept follows on stdout.
        print(judge_unavailable_line(record.judge_first_error or ""), file=sys.stderr)
    return RUN_EXITS.get(record.status, EXIT_OK), show


# The exit code of a run that ended with each status other than completed.
RUN_EXITS = {ABORTED_BUDGET: EXIT_BUDGET, ABORTED_JUDGE: EXIT_JUDGE_UNAVAILABLE}


def _with_diagnosis(shown: dict, diagnosis) -> dict:
    """``--json`` with ``diagnosis`` (CONTRACT section 20) when the run has one."""
    return shown if diagnosis is None else {**shown, "diagnosis": diagnosis.to_dict()}


def _print_summary(record, summaries, all_metrics: bool, diagnosis=None) -> None:
    print(summary_table(summaries, all_metrics))
    hidden = (
        None
        if all_metrics
        else hidden_note(summaries, f"ragproof show {record.run_id} --all-metrics")
    )
    if hidden:
        print(hidden)
    masked = secrets_line(record.secrets_masked)
    if masked:
        print(masked)
    if diagnosis is not None:
        print("\n".join(diagnosis.lines()))
    tradeoff = refusal_tradeoff(summaries)
    if tradeoff:
        print(tradeoff)
    latency = latency_note(summaries, stored_run_settings(record).get("concurrency"))
    if latency:
        print(latency)
    calls = adapter_calls_line(record.adapter_calls)
    if calls is not None:
        print(calls)
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
        f"{_cost(record.cost_usd)}; case failures {record.case_failures}"
    )
    _print_judge_detail(record)
    failures = judge_failures_line(record)
    if failures is not None:
        print(failures)


def _cost(cost_usd: float | None) -> str:
    if cost_usd is None:
        return (
            "cost unknown (no price for the judge model: set RAGPROOF_JUDGE_INPUT_COST_PER_MTOK "
            "and RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK)"
        )
    return f"cost {format_usd(cost_usd)}"


def _print_judge_detail(record) -> None:
    """Per-metric, per-model judge usage and the jury's agreement (CONTRACT section 15)."""

    if record.judge_usage:
        print("judge usage by metric and model:")
        print(judge_usage_table(record.judge_usage))
    for line in agreement_lines(record.judge_agreement):
        print(line)


def cmd_runs(args: argparse.Namespace) -> int:
    store = open_store()
    wanted = dict(args.tags or ())
    # The page, newest first in the catalog, shown oldest first as ever; each listed run's
    # files are checked (one stat a file), never the whole store's.
    if args.name is None and not wanted:
        page = store.catalog_records(
            "true", newest_first=True, limit=args.limit, offset=args.offset
        )
    else:
        matching = [
            r
            for r in store.catalog_records("true", newest_first=True)
            if r.matches(args.name, wanted)
        ]
        page = matching[args.offset : args.offset + args.limit]
    records = store.check_listed(page)[::-1]
    warn_damaged(store)
    if args.json:
        print_json([run_dict(r) for r in records])
    else:
        print(runs_table(records))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    store = open_store()
    store.require_intact(args.run_id)
    if args.case is not None:
        case = gather_case(store, args.run_id, args.case)
        if args.json:
            print_json(case)
        else:
            print(case_text(case))
        return EXIT_OK
    record = store.get_run(args.run_id)
    warn_damaged(store, (args.run_id,))
    summaries = store.summaries(args.run_id)
    calibrations = store.calibrations(args.run_id)
    diagnosis = stored_diagnosis(store, args.run_id, summaries)
    if args.json:
        shown = {
            **run_json(
                record.run_id,
                record.status,
                summaries,
                record.judge_activity(),
                secrets_masked=record.secrets_masked,
            ),
            "run": run_dict(record),
        }
        if calibrations:
            shown["calibrations"] = calibration_json(calibrations)
        print_json(_with_diagnosis(shown, diagnosis))
        return EXIT_OK
    print(f"run {record.run_id}: {record.status}, {record.cases} cases")
    print(f"dataset {record.dataset}; adapter {record.adapter}")
    print(identity_line(record))
    _print_summary(record, summaries, args.all_metrics, diagnosis)
    if calibrations:
        print(calibration_table(summaries, calibrations))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="evaluate a dataset (one Dagster run, one partition)")
    run.add_argument("--dataset", help="dataset file, JSON Lines or Parquet (required)")
    run.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="continue an interrupted or aborted run in place (its dataset and config)",
    )
    run.add_argument("--config", help="the config file, ragproof.toml (every key has a default)")
    run.add_argument(
        "--adapter", help="adapter as package.module:Name (default: the demo pipeline)"
    )
    add_run_key_flags(run)
    run.add_argument(
        "--judge-repeats",
        type=int,
        metavar="M",
        help="judge.repeats: send every judge request M times and score the mean "
        "(their agreement: judge_self_agreement)",
    )
    run.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    run.add_argument("--dry-run", action="store_true", help="estimate judge calls and cost only")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    all_metrics_flag(run)
    run.set_defaults(func=cmd_run)

    runs = sub.add_parser("runs", help="list stored runs")
    runs.add_argument("--name", help="only the runs of this name")
    tag_flag(runs, "only the runs with this tag; repeatable (every one must match)")
    runs.add_argument("--json", action="store_true", help="print the runs as a JSON array")
    runs.add_argument(
        "--limit",
        type=_count,
        default=DEFAULT_RUNS_LISTED,
        help=f"list the latest N runs (default {DEFAULT_RUNS_LISTED})",
    )
    runs.add_argument(
        "--offset", type=_count, default=0, help="skip the latest N runs first (default 0)"
    )
    runs.set_defaults(func=cmd_runs)

    show = sub.add_parser("show", help="one run's summary")
    show.add_argument("run_id", metavar="RUN_ID", help="the run to show (see ragproof runs)")
    show.add_argument(
        "--case",
        metavar="CASE_ID",
        help="show one case instead: the question, what the pipeline said (answer, retrieval, "
        "citations, steps) and each metric's status, value, reason and judge reply",
    )
    show.add_argument("--json", action="store_true", help="print the summary as JSON")
    all_metrics_flag(show)
    show.set_defaults(func=cmd_show)
