"""`ragproof generate nuggets`: each case's nuggets written from its expected answer by the
judge model (CONTRACT section 20). The logic lives in ``ragproof_core.generate.nuggets``;
this module checks the arguments, opens the judge, and prints and exits."""

from __future__ import annotations

import argparse
import asyncio
import sys
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
from ragproof_cli.generate_qa import writer_env
from ragproof_core.data.dataset import load_dataset
from ragproof_core.generate.nuggets import generate_nuggets, output_lines
from ragproof_core.generate.output import write_bytes
from ragproof_core.generate.summary import nuggets_summary_dict, render_nuggets_summary
from ragproof_core.judge import ABORTED_JUDGE, check_credentials, make_judge
from ragproof_core.metrics.diagnostics import GENERATE_PROMPT


def cmd_generate_nuggets(args: argparse.Namespace) -> int:
    if Path(args.out).suffix.lower() == ".parquet":
        raise UsageError(f"--out {args.out}: nuggets are written as JSON Lines (.jsonl)")
    cases = load_dataset(args.dataset)  # the whole dataset checked before any call
    env = writer_env(args.config, "generate nuggets")
    check_credentials(env)
    judge = make_judge(env, open_store().layout.judge_cache_path, use_cache=not args.no_cache)
    assert judge is not None
    try:
        outcome = asyncio.run(_generate(cases, judge, args.seed))
        generated = {
            "seed": args.seed,
            "model": judge.model,
            "prompt_hashes": {GENERATE_PROMPT: judge.prompts[GENERATE_PROMPT].sha256},
        }
        write_bytes(
            Path(args.out), b"".join(output_lines(args.dataset, outcome.written, generated))
        )
        summary = (outcome, args.out, args.seed, judge.model, judge.stats, judge.priced)
        if args.json:
            print_json(nuggets_summary_dict(*summary))
        else:
            print(render_nuggets_summary(*summary))
    finally:
        judge.close()
    if outcome.aborted:
        kept = f"the {len(outcome.written)} cases' nuggets written so far are in {args.out}"
        if outcome.status == ABORTED_JUDGE:
            print(f"{judge_unavailable_line(outcome.aborted)}; {kept}", file=sys.stderr)
            return EXIT_JUDGE_UNAVAILABLE
        print(f"ragproof: generation stopped at the judge budget; {kept}", file=sys.stderr)
        return EXIT_BUDGET
    return EXIT_OK


async def _generate(cases, judge, seed):
    try:
        return await generate_nuggets(cases, judge, seed)
    finally:
        await judge.drain()


def register(gen_sub: argparse._SubParsersAction) -> None:
    """Adds `nuggets` to the `generate` sub-command set."""
    nuggets = gen_sub.add_parser(
        "nuggets",
        help="nuggets for the cases with an expected answer, written by the judge model",
        description="Write, for each case with an expected_answer and no nuggets, at most 10 "
        "nuggets (the facts a good answer states, vital or not) taken from its expected "
        "answer by the configured judge model; other cases are copied unchanged. See "
        "docs/generate.md.",
    )
    nuggets.add_argument(
        "--dataset", required=True, help="the dataset to read (JSON Lines or Parquet)"
    )
    nuggets.add_argument(
        "--out", required=True, help="the dataset file to write (JSON Lines; may be --dataset)"
    )
    nuggets.add_argument("--seed", type=int, default=0, help="seed of the requests (default 0)")
    nuggets.add_argument("--config", help="ragproof.toml (its [judge] table)")
    nuggets.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    nuggets.add_argument("--json", action="store_true", help="print the summary as JSON")
    nuggets.set_defaults(func=cmd_generate_nuggets)
