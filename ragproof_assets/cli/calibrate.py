"""`ragproof calibrate`: judge agreement with the human-scored fixtures."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ragproof_assets.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_BUDGET,
    EXIT_OK,
    UsageError,
    open_store,
    print_json,
)
from ragproof_core.settings import JudgeEnv


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ragproof_core.judge.calibrate import calibrate
    from ragproof_core.judge.session import make_judge
    from ragproof_core.judge.types import BudgetExceeded

    judge = make_judge(
        JudgeEnv.from_env(),
        open_store().layout.judge_cache_path,
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
        print_json(report.to_dict())
    else:
        print(report.render_table())
    return EXIT_OK if report.passed else EXIT_BAD_INPUT


def register(sub: argparse._SubParsersAction) -> None:
    calibrate = sub.add_parser("calibrate", help="judge agreement with human-scored fixtures")
    calibrate.add_argument("--exact", type=float, default=0.70, help="exact-agreement threshold")
    calibrate.add_argument("--within", type=float, default=0.90, help="within-band threshold")
    calibrate.add_argument("--no-cache", action="store_true", help="bypass the judge cache")
    calibrate.add_argument("--json", action="store_true")
    calibrate.set_defaults(func=cmd_calibrate)
