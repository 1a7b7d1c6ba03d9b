"""The `ragproof` command line (CONTRACT sections 5 to 14).

One module per command family; each has ``register(sub)`` adding its parsers
with ``func`` set to the handler. ``main`` turns user errors into one line on
stderr and an exit code.

Exit codes: 0 success; 1 bad input, failed calibration or a refused
comparison; 2 a run aborted on its budget; 3 an internal error; 4 a
regression found by ``compare --fail-on-regression``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ragproof_assets.cli import calibrate, compare, generate, generate_qa, importing, run, sql
from ragproof_assets.cli.common import EXIT_BAD_INPUT, EXIT_OK, UsageError
from ragproof_core.dataset import DatasetError
from ragproof_core.robustness.generate import GenerationError
from ragproof_core.settings import ConfigError
from ragproof_core.store.run_store import RunNotFound


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragproof", description="Evaluate RAG pipelines.")
    sub = parser.add_subparsers(dest="command", required=True)
    run.register(sub)
    compare.register(sub)
    calibrate.register(sub)
    generate_qa.register(generate.register(sub))
    importing.register(sub)
    sql.register(sub)
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
