"""`ragproof generate qa`: a test set written from a corpus by the judge model
(CONTRACT section 13). The logic lives in ``ragproof_core.generate``; this
module checks the arguments, opens the judge, and prints and exits."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from pathlib import Path

from ragproof_cli.common import (
    EXIT_BUDGET,
    EXIT_JUDGE_UNAVAILABLE,
    EXIT_OK,
    UsageError,
    judge_unavailable_line,
    open_store,
    print_json,
)
from ragproof_core.config import load_config
from ragproof_core.generate.corpus import load_corpus
from ragproof_core.generate.estimate import estimate_generation
from ragproof_core.generate.output import case_rows, write_rows
from ragproof_core.generate.qa import (
    DEFAULT_MAX_ATTEMPTS,
    QA_PROMPTS,
    GenerationInputError,
    GenerationPlan,
    generate_questions,
    plan_slots,
)
from ragproof_core.generate.summary import render_summary, summary_dict
from ragproof_core.judge import (
    ABORTED_JUDGE,
    JudgeEnv,
    check_credentials,
    judge_environment,
    make_judge,
)


def writer_env(config_path: str | None, command: str) -> JudgeEnv:
    """The judge settings a generator writes with (``generate qa``, ``generate nuggets``)."""
    env = judge_environment(load_config(config_path).judge)
    if not env.models:
        raise UsageError(f"{command} needs a judge model: set RAGPROOF_JUDGE_MODEL")
    # A jury judges; one model writes. The first model of a jury writes and critiques.
    return replace(env, model=env.models[0])


def cmd_generate_qa(args: argparse.Namespace) -> int:
    try:
        plan = GenerationPlan(
            count=args.count,
            unanswerable=args.unanswerable,
            seed=args.seed,
            max_attempts=args.max_attempts,
            multi_chunk=args.multi_chunk,
        )
        env = writer_env(args.config, "generate qa")
        chunks = load_corpus(args.corpus)
        plan_slots(chunks, plan)  # a corpus that cannot supply the plan fails before any call
    except GenerationInputError as exc:
        raise UsageError(str(exc)) from None

    cache_path = open_store().layout.judge_cache_path
    if args.dry_run:
        return _dry_run(args, chunks, plan, env, cache_path)
    check_credentials(env)
    judge = make_judge(env, cache_path, use_cache=not args.no_cache)
    assert judge is not None
    try:
        outcome = asyncio.run(_generate(chunks, plan, judge))
        return _finish(args, outcome, judge)
    finally:
        judge.close()


async def _generate(chunks, plan, judge):
    try:
        return await generate_questions(chunks, plan, judge)
    finally:
        await judge.drain()


def _finish(args: argparse.Namespace, outcome, judge) -> int:
    hashes = {name: judge.prompts[name].sha256 for name in QA_PROMPTS}
    rows = case_rows(outcome.kept, args.seed, judge.model, hashes)
    if rows:
        write_rows(Path(args.out), rows)
    stats = judge.stats
    if args.json:
        print_json(summary_dict(outcome, args.out, args.seed, judge.model, stats, judge.priced))
    else:
        print(render_summary(outcome, args.out, args.seed, judge.model, stats, judge.priced))
    if outcome.aborted:
        kept = (
            f"kept the {len(rows)} cases written so far in {args.out}"
            if rows
            else f"no case was kept, {args.out} not written"
        )
        if outcome.status == ABORTED_JUDGE:
            print(f"{judge_unavailable_line(outcome.aborted)}; {kept}", file=sys.stderr)
            return EXIT_JUDGE_UNAVAILABLE
        print(f"ragproof: generation stopped at the judge budget; {kept}", file=sys.stderr)
        return EXIT_BUDGET
    return EXIT_OK


def _dry_run(args, chunks, plan, env, cache_path) -> int:
    # An estimate must not create the store's cache file: open it only if it exists.
    judge = make_judge(
        env, cache_path if cache_path.exists() else None, not args.no_cache, read_only=True
    )
    assert judge is not None
    try:
        estimate = asyncio.run(estimate_generation(chunks, plan, judge))
    finally:
        judge.close()
    print_json(estimate.to_dict()) if args.json else print(estimate.render())
    return EXIT_OK


def register(gen_sub: argparse._SubParsersAction) -> None:
    """Adds `qa` to the `generate` sub-command set."""

    qa = gen_sub.add_parser(
        "qa",
        help="question/answer cases written from a corpus by the judge model",
        description="Write N qa cases (and M unanswerable ones) from a corpus of chunks "
        "through the configured judge model; every question is critiqued, and rejected "
        "or near-duplicate ones are replaced. See docs/generate.md.",
    )
    qa.add_argument("--corpus", required=True, help='JSON Lines of {"id", "text", "metadata"}')
    qa.add_argument("--out", required=True, help="the dataset file to write (JSON Lines)")
    qa.add_argument("--count", type=int, required=True, help="qa cases to write")
    qa.add_argument("--unanswerable", type=int, default=0, help="unanswerable cases to write")
    qa.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    qa.add_argument(
        "--multi-chunk",
        type=int,
        default=0,
        help="of the qa cases, how many to write from two chunks of one document",
    )
    qa.add_argument(
        "--max-attempts",
        type=int,
        default=DEFAULT_MAX_ATTEMPTS,
        help="questions tried per case before it is left unfilled "
        f"(default {DEFAULT_MAX_ATTEMPTS})",
    )
    qa.add_argument("--config", help="ragproof.toml (its [judge] table)")
    qa.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    qa.add_argument("--dry-run", action="store_true", help="estimate judge calls and cost only")
    qa.add_argument("--json", action="store_true", help="print the summary as JSON")
    qa.set_defaults(func=cmd_generate_qa)
