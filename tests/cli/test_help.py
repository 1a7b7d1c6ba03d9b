"""Every argument and flag of every `ragproof` command says what it is for."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from ragproof_cli import build_parser


def _parsers(
    parser: argparse.ArgumentParser, name: str = "ragproof"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def _undocumented() -> list[str]:
    missing = []
    for name, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [
                    f"{name} {choice.dest}"
                    for choice in action._choices_actions
                    if not (choice.help or "").strip()
                ]
            elif not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_argument_and_flag_has_help() -> None:
    parsers = dict(_parsers(build_parser()))
    assert {
        "ragproof runs",
        "ragproof show",
        "ragproof generate injection",
        "ragproof generate attacks",
    } <= set(parsers)
    assert _undocumented() == []


def test_list_valued_flags_say_comma_separated_once() -> None:
    run = dict(_parsers(build_parser()))["ragproof run"]
    (metrics,) = [a for a in run._actions if "--metrics" in a.option_strings]
    assert metrics.help.count("comma-separated") == 1
    assert metrics.help.endswith("(default: every metric)")


def test_run_ids_are_named_run_id_in_usage() -> None:
    parsers = dict(_parsers(build_parser()))
    for name in ("ragproof show", "ragproof report"):
        assert "RUN_ID" in parsers[name].format_usage(), name
