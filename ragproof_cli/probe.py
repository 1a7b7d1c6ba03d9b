"""`ragproof probe RUN_ID`: the run's judge re-asked on perturbed copies of sampled
judge-scored cases (verbosity, position, self_reference), and how many verdicts
changed band per metric and perturbation; stored for the app (CONTRACT section 22)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from ragproof_cli.common import (
    EXIT_BUDGET,
    EXIT_JUDGE_UNAVAILABLE,
    EXIT_OK,
    UsageError,
    judge_unavailable_line,
    open_store,
    print_json,
)
from ragproof_core.adapters.history import with_stored_histories
from ragproof_core.calibration import DEFAULT_SAMPLE, judge_scores, probe, probe_sample
from ragproof_core.config import RunSettings
from ragproof_core.judge import (
    BudgetExceeded,
    JudgeUnavailable,
    check_credentials,
    judge_environment,
    make_judge,
)
from ragproof_core.metrics import (
    MetricSelectionError,
    Registry,
    give_rubrics,
    run_registry,
    stored_tables,
)
from ragproof_core.store import StoreLocked, stored_run_settings


def _metrics(
    asked: list[str] | None, judged: set[str], run_id: str, registry: Registry
) -> list[str]:
    """The judge metrics to probe: those asked for (names or patterns), else every metric
    the judge scored in the run; each must be one the judge scored and the run declares
    (``registry``: the shipped metrics and the run's own rubric metrics)."""
    probeable = {m for m in judged if (s := registry.spec(m)) is not None and s.plan is not None}
    if not asked:
        if not probeable:
            raise UsageError(f"probe: the judge scored no judge metric in run {run_id}")
        return registry.order(probeable)
    try:
        names = registry.select([p for raw in asked for p in raw.split(",") if p.strip()])
    except MetricSelectionError as exc:
        raise UsageError(f"--metrics: {exc}") from None
    chosen = [m for m in names if m in probeable]
    if not chosen:
        raise UsageError(
            f"--metrics: the judge scored none of {', '.join(names)} in run {run_id} "
            f"(judge-scored: {', '.join(registry.order(probeable)) or 'none'})"
        )
    return chosen


def cmd_probe(args: argparse.Namespace) -> int:
    if args.sample < 1:
        raise UsageError(f"--sample must be at least 1, got {args.sample}")
    store = open_store()
    record = store.get_run(args.run_id)  # RunNotFound (exit 1) for an unknown run
    results = store.case_results_frame(args.run_id)
    judged = judge_scores(results)
    # The run's own rubric metrics are probed like the shipped ones, with their prompts.
    tables = stored_tables(record.config_json)
    registry = run_registry(tables, load=False)
    metrics = _metrics(args.metrics, set(judged), args.run_id, registry)
    env = judge_environment()
    check_credentials(env)
    judge = make_judge(env, store.layout.judge_cache_path, use_cache=not args.no_cache)
    if judge is None:
        raise UsageError("probe needs the run's judge: set RAGPROOF_JUDGE_MODEL")
    give_rubrics(judge, tables)
    if record.judge_model and judge.model != record.judge_model:
        judge.close()
        raise UsageError(
            f"probe: run {args.run_id} was judged by {record.judge_model}, but "
            f"RAGPROOF_JUDGE_MODEL names {judge.model}; probe the judge that scored it"
        )
    settings = stored_run_settings(record)
    params = RunSettings(
        k=settings.get("k", RunSettings().k),
        source_match=settings.get("source_match", RunSettings().source_match),
    )
    chosen = probe_sample(judged, metrics, args.sample, args.seed)
    wanted = {c for ids in chosen.values() for c in ids}
    dataset = store.read_dataset(args.run_id)
    cases = {c.id: c for c in dataset if c.id in wanted}
    # A turn's judge prompts carried its conversation's earlier turns: so do the probe's.
    stored = with_stored_histories(dataset, store.read_outputs(args.run_id))
    outputs = {o.case_id: o for o in stored if o.case_id in wanted}

    async def asking():
        try:
            return await probe(
                judge,
                args.run_id,
                cases,
                outputs,
                chosen,
                params,
                sample=args.sample,
                seed=args.seed,
                registry=registry,
            )
        finally:
            await judge.drain()

    try:
        result = asyncio.run(asking())
    except BudgetExceeded:
        print(
            "ragproof: probe stopped at the judge budget (RAGPROOF_MAX_COST_USD)", file=sys.stderr
        )
        return EXIT_BUDGET
    except JudgeUnavailable as exc:
        print(judge_unavailable_line(str(exc)), file=sys.stderr)
        return EXIT_JUDGE_UNAVAILABLE
    finally:
        judge.close()
    store.write_probe(result)
    with contextlib.suppress(StoreLocked):  # the view globs every probe once refreshed
        store.ensure_views(timeout_s=5)
    stats = judge.stats
    print(
        f"probe: {stats.requests} judge request(s), {stats.cache_hits} verdict(s) from the cache",
        file=sys.stderr,
    )
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.render_table())
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    probe_parser = sub.add_parser(
        "probe",
        help="measure the judge's bias: verdicts that change under irrelevant perturbations",
        description="Re-ask the run's judge on perturbed copies of a seeded sample of its "
        "judge-scored cases, stratified by band: verbosity (the answer padded with filler), "
        "position (the context's chunks reversed) and self_reference (the answer claiming "
        "its own support). Prints, per metric and perturbation, how many verdicts changed "
        "band (0, 0.5, 1) with a 95%% Wilson interval, and stores it (view probes). "
        "Perturbed inputs are new judge cache keys; a repeated probe reads them back.",
    )
    probe_parser.add_argument("run_id", metavar="RUN_ID", help="a stored run")
    probe_parser.add_argument(
        "--metrics",
        nargs="+",
        metavar="METRIC",
        help="judge metrics (names, comma lists or patterns such as 'generation.*'; "
        "default: every metric the judge scored)",
    )
    probe_parser.add_argument(
        "--sample",
        type=int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"cases per metric (default {DEFAULT_SAMPLE})",
    )
    probe_parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    probe_parser.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    probe_parser.add_argument("--json", action="store_true", help="print the result as JSON")
    probe_parser.set_defaults(func=cmd_probe)
