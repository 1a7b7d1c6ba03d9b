"""A command imports only its own family's module (``ragproof_cli.COMMANDS``), and the
parser built for one command says what the full parser says."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from ragproof_cli import COMMANDS, build_parser, command_named, families_of
from tests.assets.expected import RUN_ARGS
from tests.support.cli import REPO, cli_env

# Runs one command in a fresh interpreter as the `ragproof` script does, then writes
# the names of every module the process holds.
PROBE = (
    "import json, sys\n"
    "from ragproof_cli import main\n"
    "code = main(sys.argv[2:])\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump(sorted(sys.modules), out)\n"
    "sys.exit(code)\n"
)
# What other commands need and `run` and `runs` must not pay for: the web app and its
# server, and LiteLLM when no judge is set.
NOT_NEEDED = ("ragproof_serve", "uvicorn", "starlette", "litellm")


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _help_lines(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {a.dest: a.help for a in _subcommands(parser)._choices_actions}


def test_the_table_lists_every_command_with_the_help_its_family_registers():
    full = build_parser()
    assert _help_lines(full) == {name: entry.help for name, entry in COMMANDS.items()}
    assert list(_subcommands(full).choices) == list(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_one_commands_parser_equals_the_full_one_for_that_command(command):
    full, lazy = build_parser(), build_parser(families_of([command]))
    assert lazy.format_help() == full.format_help()
    full_sub, lazy_sub = _subcommands(full).choices, _subcommands(lazy).choices
    assert lazy_sub[command].format_help() == full_sub[command].format_help()


def test_the_command_is_the_first_word_that_is_not_a_flag():
    assert command_named(["--debug", "show", "run-1"]) == "show"
    assert command_named(["--help"]) is None
    assert command_named(["nosuch", "run"]) is None


def test_help_alone_imports_no_family_and_lists_every_command():
    assert families_of(["--help"]) == families_of(["nosuch"]) == set()
    assert build_parser(set()).format_help() == build_parser().format_help()


def _modules_after(tmp_path, *argv: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    listing = tmp_path / "modules.json"
    env = cli_env(RAGPROOF_STORE=str(tmp_path / "store"), DAGSTER_HOME=str(tmp_path / "dh"))
    env.pop("RAGPROOF_JUDGE_MODEL", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(listing), *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, json.loads(listing.read_text()) if listing.exists() else []


def _families(modules: list[str]) -> set[str]:
    return {m for m in modules if m in {entry.module for entry in COMMANDS.values()}}


def _top_level(modules: list[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_no_command_family(tmp_path):
    done, modules = _modules_after(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert "sql" in done.stdout
    assert _families(modules) == set()
    assert _top_level(modules) & {"dagster", *NOT_NEEDED} == set()


def test_help_and_a_usage_error_import_neither_the_store_nor_its_libraries(tmp_path):
    # What every command imports first (ragproof_cli and its error reporting) is light:
    # `run --shards N` starts its forkserver before anything heavier.
    for argv, code in ((["--help"], 0), (["nosuch"], 1)):
        done, modules = _modules_after(tmp_path, *argv)
        assert done.returncode == code, done.stderr
        heavy = {"ragproof_core.store", "pyarrow", "pandas", "duckdb", "numpy", "dagster"}
        assert set(modules) & heavy == set(), argv


def test_runs_imports_neither_dagster_nor_the_web_app_nor_another_command(tmp_path):
    done, modules = _modules_after(tmp_path, "runs", "--json")
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
    assert _families(modules) == {"ragproof_cli.run"}
    assert _top_level(modules) & {"dagster", *NOT_NEEDED} == set()


@pytest.mark.slow
def test_a_run_without_a_judge_imports_no_web_app_no_litellm_and_no_other_command(tmp_path):
    done, modules = _modules_after(tmp_path, *RUN_ARGS, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert _families(modules) == {"ragproof_cli.run"}
    assert _top_level(modules) & set(NOT_NEEDED) == set()


@pytest.mark.slow
def test_a_sharded_run_reads_its_results_without_importing_pandas(tmp_path):
    # The steps run in processes of their own; the command only creates the run and
    # reads the stored record back, whose UTC times pyarrow would convert through pandas.
    done, modules = _modules_after(tmp_path, *RUN_ARGS, "--shards", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert "pandas" not in _top_level(modules)


def test_suites_check_imports_no_dagster(tmp_path):
    # CONTRACT section 30: the same verdict as the code location's load, without Dagster.
    done, modules = _modules_after(tmp_path, "suites", "check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ragproof_demo: data/demo/cases.jsonl")
    assert _families(modules) == {"ragproof_cli.suites"}
    assert _top_level(modules) & {"dagster", *NOT_NEEDED} == set()
