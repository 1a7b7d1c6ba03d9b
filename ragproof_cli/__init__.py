"""The `ragproof` command line (CONTRACT sections 5 to 14).

One module per command family; each has ``register(sub)`` adding its parsers
with ``func`` set to the handler. ``main`` turns every error into one line on
stderr and an exit code (``errors.py``).

Exit codes (CONTRACT section 29, ``errors.EXIT_CODES``): 0 success; 1 bad input
(including a usage error), failed calibration or a refused comparison; 2 a budget
abort; 3 an internal error; 4 a regression (``compare --fail-on-regression``) or a broken floor
(``check``, CONTRACT section 25); 5 a store or
DAGSTER_HOME fault; 6 the judge unavailable; 130 SIGINT; 143 SIGTERM.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ragproof_cli import step_server
from ragproof_cli.errors import OneLineParser, debug_requested, exit_codes_help, report_error
from ragproof_core.gc_pause import collector_paused


@dataclass(frozen=True)
class Command:
    """A command's family module (its ``register(sub)`` adds the family's parsers)
    and the one line ``ragproof --help`` lists it with."""

    module: str
    help: str


# Every command in the order ``ragproof --help`` lists them, a family's together. A
# command imports only its own family's module: the families between them import
# Dagster, the web server, LiteLLM and pandas, seconds a process that needs none of
# them would spend. Each line repeats the help its module registers (a test pins it).
COMMANDS: dict[str, Command] = {
    "run": Command("ragproof_cli.run", "evaluate a dataset (one Dagster run, one partition)"),
    "runs": Command("ragproof_cli.run", "list stored runs"),
    "show": Command("ragproof_cli.run", "one run's summary"),
    "compare": Command("ragproof_cli.compare", "paired comparison of two runs"),
    "check": Command(
        "ragproof_cli.check",
        "apply the floors of a [gate] table to a run: exit 4 when one is broken",
    ),
    "calibrate": Command(
        "ragproof_cli.calibrate",
        "judge agreement with human-scored fixtures, or bias-corrected means from labels",
    ),
    "generate": Command("ragproof_cli.generate", "generate test cases"),
    "import": Command(
        "ragproof_cli.importing",
        "import a test set (and recorded outputs) from another tool's files",
    ),
    "judge": Command("ragproof_cli.judge", "check the configured judge"),
    "plan": Command("ragproof_cli.plan", "cases needed to detect a change of --delta, per metric"),
    "probe": Command(
        "ragproof_cli.probe",
        "measure the judge's bias: verdicts that change under irrelevant perturbations",
    ),
    "report": Command("ragproof_cli.report", "write a run's self-contained HTML report"),
    "serve": Command(
        "ragproof_cli.serve", "browse runs, trends, reports and comparisons on 127.0.0.1"
    ),
    "label": Command(
        "ragproof_cli.serve", "label a run's judge-scored cases in the browser, one at a time"
    ),
    "sql": Command(
        "ragproof_cli.sql",
        "read-only SQL over the runs, case_results, metric_summaries, outputs and metrics views",
    ),
    "suites": Command("ragproof_cli.suites", "check suites.toml: each suite and its schedule"),
    "gc": Command(
        "ragproof_cli.retention", "remove old runs from the store and from Dagster together"
    ),
    "verify": Command(
        "ragproof_cli.verify",
        "check every run's files, the judge cache and the views; --repair fixes",
    ),
}


def command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs: its first word that is not a flag (``--debug`` and
    ``--help``, the only top-level flags, take no value); None if it names none."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return word if word in COMMANDS else None


def build_parser(families: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every family's parsers in full, or only those of
    ``families`` (modules in ``COMMANDS``), every other command a bare entry with its
    help line (all that ``ragproof --help`` and a usage error show of it)."""
    parser = OneLineParser(
        prog="ragproof",
        description="Evaluate RAG pipelines.",
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an error (also RAGPROOF_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, entry in COMMANDS.items():
        if name in sub.choices:
            continue  # registered with its family
        if families is None or entry.module in families:
            importlib.import_module(entry.module).register(sub)
        else:
            sub.add_parser(name, help=entry.help)
    return parser


def families_of(argv: Sequence[str]) -> set[str]:
    """The family module the command ``argv`` runs needs: none for ``--help`` alone
    or a word that is no command (argparse then says which are)."""
    command = command_named(argv)
    return set() if command is None else {COMMANDS[command].module}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv`` None means the process's own command line (the
    ``ragproof`` script), so the process ends when this returns."""
    ends_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    try:
        if command_named(argv) == "run":
            # Its step processes' forkserver imports beside this process's own imports.
            step_server.start_before_parsing(argv, debug=debug)
        # Importing a command's family builds some hundred thousand objects that live as
        # long as the process and hold no garbage; the collector would only rescan them
        # as they load (about a sixth of the imports' CPU time).
        with collector_paused():
            parser = build_parser(families_of(argv))
            if ends_process:
                # Nor rescanned by the command's own collections afterwards; frozen before
                # the collector resumes, whose first run would scan them all once more.
                gc.freeze()
        args = parser.parse_args(argv)
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
