"""A run's launch: what a person fills in to start one (the dataset, a config file, an
adapter and its options, any ``[run]`` key), resolved into settings the same way
wherever it is filled in: the command line, the Dagster Launchpad, a suite of
``suites.toml`` or a suite in a team's own Dagster project."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragproof_core.config.settings import Config, ConfigError, load_config


def resolve_launch(
    config_file: str | Path | None,
    adapter: str | None,
    adapter_options_json: str | None,
    run_overrides: Mapping[str, Any],
    judge_repeats: int | None = None,
) -> Config:
    """ragproof.toml (or the defaults) with the launch's values over it, validated by the
    settings' strict schema (``ConfigError`` naming the key). None means "the file's";
    ``judge_repeats``: ``[judge] repeats`` (CONTRACT section 27)."""
    options = None
    if adapter_options_json:
        try:
            options = json.loads(adapter_options_json)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"adapter_options_json: not valid JSON ({exc.msg})") from None
        if not isinstance(options, dict):
            raise ConfigError("adapter_options_json: expected a JSON object")
    return load_config(config_file).with_overrides(
        adapter=adapter, options=options, judge_repeats=judge_repeats, **run_overrides
    )
