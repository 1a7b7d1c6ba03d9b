"""The `ragproof` command line (CONTRACT sections 5 to 14).

One module per command family; each has ``register(sub)`` adding its parsers
with ``func`` set to the handler. ``main`` turns every error into one line on
stderr and an exit code (``errors.py``).

Exit codes: 0 success; 1 bad input (including a usage error), failed
calibration or a refused comparison; 2 a run aborted on its budget; 3 an
internal error; 4 a regression found by ``compare --fail-on-regression``; 5 the
store could not be written during a run, which stopped its judge requests.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from ragproof_cli import (
    calibrate,
    compare,
    generate,
    generate_qa,
    importing,
    plan,
    probe,
    report,
    run,
    serve,
    sql,
)
from ragproof_cli.errors import OneLineParser, debug_requested, report_error


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="ragproof", description="Evaluate RAG pipelines.")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an error (also RAGPROOF_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run.register(sub)
    compare.register(sub)
    calibrate.register(sub)
    generate_qa.register(generate.register(sub))
    importing.register(sub)
    plan.register(sub)
    probe.register(sub)
    report.register(sub)
    serve.register(sub)
    sql.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv`` None means the process's own command line (the
    ``ragproof`` script), so the process ends when this returns."""
    ends_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    try:
        args = build_parser().parse_args(argv)
        args.debug = debug
        # Like uvicorn: `--adapter mymodule:RAG` finds mymodule in the working folder.
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return args.func(args)
    except BaseException as exc:  # noqa: BLE001 - every error ends as one line and a code
        return report_error(exc, debug=debug)
    finally:
        if ends_process:
            # At exit the interpreter runs the cyclic collector over every object left,
            # and a judged run holds those of some 4,000 modules (Dagster, LiteLLM): about
            # 2 s of CPU spent on memory the OS takes back anyway. Frozen objects are
            # skipped; exit handlers still run and reference counting still closes files.
            gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
