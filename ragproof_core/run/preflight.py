"""Everything a run needs, checked before anything is created (CONTRACT section 14).

A run that would fail on its input must fail before a partition, a run folder
or a manifest exists, so bad input leaves the store byte for byte unchanged.
``ragproof run`` calls ``preflight`` before it adds the Dagster partition, and
the ``eval_dataset`` asset calls it again before writing the manifest (runs
launched from the UI or the schedule come in that way).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from ragproof_core.adapters.loading import load_adapter
from ragproof_core.adapters.runner import close_adapter
from ragproof_core.config.settings import AdapterSpec, Config, ConfigError
from ragproof_core.data.dataset import load_dataset
from ragproof_core.judge.environment import judge_environment
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.model import Case, units


@dataclass(frozen=True, slots=True)
class Checked:
    """The validated inputs of a run."""

    config: Config
    cases: list[Case]
    judge_env: JudgeEnv


def preflight(config: Config, dataset: str | Path, *, adapter_checked: bool = False) -> Checked:
    """Read the dataset, parse the judge's environment and build the adapter.

    Raises ``DatasetError``, ``ConfigError`` or ``AdapterLoadError`` (each one
    line naming the file, line, key or variable); returns without side effects.
    ``adapter_checked``: this run's ``ragproof run`` already built the adapter
    (a million-line recording is validated once, not once per process).
    """
    cases = load_dataset(dataset)
    # A conversation is never split across shards: it counts as one unit here.
    shards = config.run.shards
    if shards > len(cases) or (shards > 1 and shards > sum(1 for _ in units(cases))):
        # An empty shard is a Dagster step for nothing; thousands of them never finish planning.
        raise ConfigError(
            f"run.shards: {config.run.shards} shards for {len(cases)} case(s) in {dataset}; "
            "use at most one shard per case (a conversation counts as one)"
        )
    judge_env = judge_environment(config.judge)
    if not adapter_checked:
        check_adapter(config.adapter)
    return Checked(config, cases, judge_env)


# The adapter preflight built, kept for the evaluation step of the same process
# (`ragproof run` executes the job in-process), so a 100,000-line recording is
# parsed once, not once to check it and again to run it. One entry at most.
_BUILT: dict[str, object] = {}


def _spec_key(spec: AdapterSpec) -> str:
    return json.dumps([spec.target, spec.options], sort_keys=True, default=str)


def check_adapter(spec: AdapterSpec) -> None:
    """Import and construct the adapter: a missing module, a bad option or an
    unreadable recording is reported now, not as a failed step."""
    key = _spec_key(spec)
    if key in _BUILT:
        return
    adapter = load_adapter(spec.target, spec.options)
    for stale in list(_BUILT.values()):
        asyncio.run(close_adapter(stale))
    _BUILT.clear()
    _BUILT[key] = adapter


def take_adapter(spec: AdapterSpec, *, prechecked: bool = False) -> object:
    """The adapter ``check_adapter`` built in this process for ``spec``, else a new one.

    The caller owns it (and closes it). Steps run in their own processes (the
    UI's default executor) simply build their own; ``prechecked`` says the
    run's preflight already validated the adapter's input (``load_adapter``).
    """
    adapter = _BUILT.pop(_spec_key(spec), None)
    if adapter is None:
        return load_adapter(spec.target, spec.options, prechecked=prechecked)
    return adapter
