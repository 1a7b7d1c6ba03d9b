"""Everything a run needs, checked before anything is created (CONTRACT section 14).

A run that would fail on its input must fail before a partition, a run folder
or a manifest exists, so bad input leaves the store byte for byte unchanged.
``ragproof run`` calls ``preflight`` before it adds the Dagster partition, and
the ``eval_dataset`` asset calls it again before writing the manifest (runs
launched from the UI or the schedule come in that way).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from ragproof_core.adapters.loading import AdapterLoadError, load_adapter
from ragproof_core.adapters.runner import close_adapter
from ragproof_core.dataset import load_dataset
from ragproof_core.model import Case
from ragproof_core.settings import AdapterSpec, Config, JudgeEnv


@dataclass(frozen=True, slots=True)
class Checked:
    """The validated inputs of a run."""

    config: Config
    cases: list[Case]
    judge_env: JudgeEnv


def preflight(config: Config, dataset: str | Path) -> Checked:
    """Read the dataset, parse the judge's environment and build the adapter once.

    Raises ``DatasetError``, ``ConfigError`` or ``AdapterLoadError`` (each one
    line naming the file, line, key or variable); returns without side effects.
    """
    cases = load_dataset(dataset)
    judge_env = JudgeEnv.from_env().with_table(config.judge)
    check_adapter(config.adapter)
    return Checked(config, cases, judge_env)


def check_adapter(spec: AdapterSpec) -> None:
    """Import and construct the adapter, then release it: a missing module, a bad
    option or an unreadable recording is reported now, not as a failed step."""
    adapter = load_adapter(spec.target, spec.options)
    try:
        asyncio.run(close_adapter(adapter))
    except Exception as exc:
        # The adapter's own close() failing is its author's to fix, not a ragproof bug.
        raise AdapterLoadError(
            f"closing adapter {spec.target!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
