"""Nightly evaluation of the suites listed in a config file.

The schedule is defined stopped: turn it on in the UI (Automation -> nightly_suites)
or with `dagster schedule start nightly_suites -w workspace.yaml` while
`dagster dev` (or the daemon) runs.
"""

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import ValidationError

from ragproof_assets.evaluation.config import EvalRunConfig, LaunchForm, evaluate_run_config
from ragproof_assets.evaluation.jobs import evaluate_job
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_core.config import ConfigError
from ragproof_core.errors import describe, show_key, show_value, unknown_key_reason
from ragproof_core.store import new_run_id

DEFAULT_SUITES_FILE = Path("data/suites.toml")


# What a [[suite]] may say: its name plus the launch form's fields (every [run]
# key among them), so a suite, the UI and the command line take the same settings.
SUITE_KEYS: tuple[str, ...] = ("name", *EvalRunConfig.model_fields)


@dataclass(frozen=True)
class Suite:
    name: str
    # The launch form filled from the suite's keys.
    form: LaunchForm


def load_suites(path: Path) -> list[Suite]:
    """Read and validate the suites file: every suite's keys and values are checked
    now (a typo would otherwise fail at 02:00), and names must be unique (each
    names a run request; Dagster would silently drop a second request with its key)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    extra = set(raw) - {"suite"}
    if extra:
        name = sorted(extra)[0]
        reason = unknown_key_reason(name, ["suite"], noun="table")
        raise ConfigError(f"{path}: {show_key(name)}: {reason}")
    entries = raw.get("suite", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: suite: expected [[suite]] tables")
    suites: list[Suite] = []
    first_of: dict[str, int] = {}
    for n, entry in enumerate(entries, start=1):
        where = f"{path}: suite #{n}"
        suite = _suite(entry, where)
        earlier = first_of.setdefault(suite.name, n)
        if earlier != n:
            raise ConfigError(
                f"{where}: duplicate name {suite.name!r} (first used by suite #{earlier})"
            )
        suites.append(suite)
    return suites


def _suite(entry: Any, where: str) -> Suite:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table, got {show_value(entry)}")
    for key in entry:
        if key not in SUITE_KEYS:
            raise ConfigError(f"{where}: {show_key(key)}: {unknown_key_reason(key, SUITE_KEYS)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: name: expected a non-empty string, got {show_value(name)}")
    config = {k: v for k, v in entry.items() if k != "name"}
    if "dataset" not in config:
        raise ConfigError(f"{where}: dataset: missing required key")
    try:
        form = EvalRunConfig(**config)
        form.resolve()
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"{where}: {describe(exc, known=SUITE_KEYS)}") from None
    return Suite(name, form)


def suite_run_config(suite: Suite) -> dict:
    return evaluate_run_config(suite.form)


@dg.schedule(
    job=evaluate_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Every night at 02:00 UTC, evaluate each suite of data/suites.toml "
    "(or $RAGPROOF_SUITES) as a new run.",
)
def nightly_suites(context: dg.ScheduleEvaluationContext):
    path = Path(os.environ.get("RAGPROOF_SUITES") or DEFAULT_SUITES_FILE)
    if not path.exists():
        return dg.SkipReason(f"no suites file at {path}")
    suites = load_suites(path)
    if not suites:
        return dg.SkipReason(f"{path} lists no suite")
    run_ids = {suite.name: new_run_id() for suite in suites}
    # Schedules cannot request dynamic partitions the way sensors can, so the
    # partitions are added before the run requests that name them.
    context.instance.add_dynamic_partitions(evaluation_runs.name, list(run_ids.values()))
    return [
        dg.RunRequest(
            run_key=run_ids[suite.name],
            partition_key=run_ids[suite.name],
            run_config=suite_run_config(suite),
            tags={"ragproof/suite": suite.name},
        )
        for suite in suites
    ]
