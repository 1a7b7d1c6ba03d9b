"""``suites.toml``: the evaluations a team runs on a schedule (CONTRACT section 30).

One ``[[suite]]`` table each: ``name`` ([A-Za-z0-9_]+, unique), ``dataset``, and
optionally what a launch takes (``config_file``, ``adapter``,
``adapter_options_json``, ``no_cache``, any ``[run]`` key), its schedule (``cron``,
``timezone``) and ``keep_last`` (CONTRACT section 31). The file is read when
ragproof's code location loads, which gives each suite the schedule
``ragproof_<name>``; ``ragproof suites check`` reads it the same way without
Dagster. Every problem is one ``ConfigError`` naming the file, the suite and the
key. Relative paths are from the folder the location runs in, as on the command
line. ``cron`` and ``timezone`` are used as written (no ``${NAME}``, CONTRACT
section 28): they are read now, not when a run starts.
"""

from __future__ import annotations

import os
import re
import tomllib
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic.dataclasses import dataclass as strict_dataclass

from ragproof_core.config.cron import is_valid_cron
from ragproof_core.config.expansion import names_variables
from ragproof_core.config.launch import resolve_launch
from ragproof_core.config.settings import RUN_KEYS, ConfigError
from ragproof_core.errors import describe, show_key, show_value, unknown_key_reason
from ragproof_core.settings_schema import STRICT

SUITES_ENV = "RAGPROOF_SUITES"
DEFAULT_SUITES_FILE = Path("data/suites.toml")
# A suite without `cron` gets a schedule at this time, stopped until someone turns it on.
DEFAULT_CRON = "0 2 * * *"
DEFAULT_TIMEZONE = "UTC"
SUITE_NAME = re.compile(r"[A-Za-z0-9_]+")
NAME_RULE = "expected letters, digits and underscores only ([A-Za-z0-9_]+)"


@strict_dataclass(frozen=True, config=STRICT)
class SuiteTable:
    """A ``[[suite]]``'s own keys; its ``[run]`` keys are the run settings' (``RUN_KEYS``)."""

    name: str
    dataset: str = Field(min_length=1)
    config_file: str | None = None
    adapter: str | None = None
    adapter_options_json: str | None = None
    no_cache: bool = False
    # Checked by the judge table's strict schema as the run resolves (resolve_launch).
    judge_repeats: Any = None
    cron: str | None = None
    timezone: str = DEFAULT_TIMEZONE
    keep_last: int | None = Field(default=None, ge=1)

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None and not is_valid_cron(value):
            raise ValueError(
                f"not a cron schedule: {show_value(value)} (five fields, minute hour "
                'day-of-month month day-of-week, such as "0 2 * * *", or @daily)'
            )
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {show_value(value)} (an IANA name such as "
                '"UTC" or "Europe/Paris")'
            ) from None
        return value


LAUNCH_KEYS: tuple[str, ...] = (
    "dataset",
    "config_file",
    "adapter",
    "adapter_options_json",
    "no_cache",
    "judge_repeats",
)
# A suite's `name` is the suite's: its runs are named after it unless the config file
# names them ([run] name); every other [run] key may be set per suite.
SUITE_RUN_KEYS: tuple[str, ...] = tuple(key for key in RUN_KEYS if key != "name")
SCHEDULE_KEYS: tuple[str, ...] = ("cron", "timezone", "keep_last")
# Every key a [[suite]] may have, in the order the docs list them.
SUITE_KEYS: tuple[str, ...] = ("name", *LAUNCH_KEYS, *SUITE_RUN_KEYS, *SCHEDULE_KEYS)
# The run tag every run of a suite carries (CONTRACT sections 25 and 30).
SUITE_TAG = "suite"


@dataclass(frozen=True)
class Suite:
    name: str
    # The launch form's fields as written (dataset, config file, ..., [run] keys): what
    # the Launchpad and the command line take.
    launch: Mapping[str, Any]
    cron: str | None
    timezone: str
    keep_last: int | None

    @property
    def scheduled(self) -> bool:
        """Whether the suite runs on its schedule by itself (it sets ``cron``)."""
        return self.cron is not None

    @property
    def schedule_cron(self) -> str:
        return self.cron or DEFAULT_CRON


def suites_file(env: Mapping[str, str] | None = None) -> Path:
    """``$RAGPROOF_SUITES``, else ``data/suites.toml``."""
    return Path((env if env is not None else os.environ).get(SUITES_ENV) or DEFAULT_SUITES_FILE)


def load_suites(path: Path) -> list[Suite]:
    """Read and validate the suites file: every suite's keys and values are checked now
    (a typo would otherwise fail at 02:00), and names must be unique (each names a
    schedule)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such suites file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read file ({exc.strerror or exc})") from None
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
        suite = _suite(entry, f"{path}: suite #{n}")
        earlier = first_of.setdefault(suite.name, n)
        if earlier != n:
            raise ConfigError(
                f"{path}: suite #{n}: name: {suite.name!r} is already the name of suite #{earlier}"
            )
        suites.append(suite)
    return suites


def _suite(entry: Any, where: str) -> Suite:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table, got {show_value(entry)}")
    name = entry.get("name")
    if not isinstance(name, str) or not SUITE_NAME.fullmatch(name):
        got = "nothing" if name is None else show_value(name)
        raise ConfigError(f"{where}: name: {NAME_RULE}, got {got}")
    # Named from here on: a message points at the suite a person knows by its name.
    where = f"{where} ({name})"
    for key in entry:
        if key not in SUITE_KEYS:
            raise ConfigError(f"{where}: {show_key(key)}: {unknown_key_reason(key, SUITE_KEYS)}")
    if "dataset" not in entry:
        raise ConfigError(f"{where}: dataset: missing required key")
    run = {key: value for key, value in entry.items() if key in SUITE_RUN_KEYS}
    try:
        table = SuiteTable(**{k: v for k, v in entry.items() if k not in SUITE_RUN_KEYS})
        # The settings the suite's runs get, resolved now as a run resolves them.
        # A config file named through ${NAME} is read when a run starts, never earlier.
        config_file = table.config_file
        resolved = resolve_launch(
            None if config_file and names_variables(config_file) else config_file,
            table.adapter,
            table.adapter_options_json,
            run,
            judge_repeats=table.judge_repeats,
        )
        resolved.selected_metrics()
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"{where}: {describe(exc, known=SUITE_KEYS)}") from None
    launch = {key: entry[key] for key in (*LAUNCH_KEYS, *SUITE_RUN_KEYS) if key in entry}
    return Suite(
        name,
        suite_identity(name, launch, resolved.run.name),
        table.cron,
        table.timezone,
        table.keep_last,
    )


def suite_identity(name: str, launch: Mapping[str, Any], run_name: str | None) -> dict[str, Any]:
    """``launch`` with the suite's identity (CONTRACT section 30): its runs tagged
    ``suite=<name>`` beside their own tags, and named after the suite unless the
    config names them (``run_name``, the config's ``[run] name``)."""
    identity = {**launch, "tags": {**dict(launch.get("tags") or {}), SUITE_TAG: name}}
    if run_name is None:
        identity["name"] = name
    return identity
