"""`ragproof judge check` (CONTRACT section 24): one small request to the configured
judge, never cached, to see that it answers before a run pays for it."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ragproof_cli.common import EXIT_BAD_INPUT, EXIT_OK, UsageError, print_json
from ragproof_cli.errors import one_line
from ragproof_core.config import load_config
from ragproof_core.judge import check_credentials, judge_environment, make_judge
from ragproof_core.judge.check import check_model


def cmd_judge_check(args: argparse.Namespace) -> int:
    table = load_config(args.config).judge if args.config else None
    env = judge_environment(table)
    if not env.models:
        raise UsageError("judge check needs a judge model: set RAGPROOF_JUDGE_MODEL")
    check_credentials(env)
    # No cache: the check's request is always sent, and its reply kept nowhere.
    judge = make_judge(env, None, use_cache=False)

    async def checking():
        try:
            return [await check_model(member) for member in getattr(judge, "members", (judge,))]
        finally:
            await judge.drain()

    checks = asyncio.run(checking())
    failed = next((check for check in checks if not check.ok), None)
    if args.json:
        print_json({"ok": failed is None, "models": [check.to_dict() for check in checks]})
    else:
        print("\n".join(check.render() for check in checks))
    if failed is not None:
        print(f"ragproof: judge check: {failed.model}: {one_line(failed.error)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    judge = sub.add_parser("judge", help="check the configured judge")
    commands = judge.add_subparsers(dest="judge_command", required=True)
    check = commands.add_parser(
        "check", help="send each judge model one small request (never cached) and report"
    )
    check.add_argument(
        "--config", help="ragproof.toml whose [judge] table names the models (default: none)"
    )
    check.add_argument("--json", action="store_true", help="print the check as JSON")
    check.set_defaults(func=cmd_judge_check)
