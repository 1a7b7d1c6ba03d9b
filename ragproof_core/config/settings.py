"""Run settings: the ``[run]``, ``[adapter]`` and ``[judge]`` tables of ragproof.toml
(CONTRACT section 3) and the environment variables that configure the judge and the store.

Each table is declared once, as a pydantic dataclass: the declaration is the
schema (strict types: no true-as-1, no 2.5-as-2, no "5"-as-5; unknown keys
rejected with the closest known name), the Python type the rest of the code
uses, and the source of the command line's flags and the Dagster launch form
(``RUN_KEYS``, ``run_key_help``). A bad value raises ``ConfigError`` with one
line ``run.k: expected an integer, got 2.5``; ``load_config`` adds the file.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from ragproof_core.config.metric_tables import (
    PREFIX as CUSTOM_PREFIX,
)
from ragproof_core.config.metric_tables import (
    MetricTable,
    MetricTableError,
    check_functions,
    parse_metric_tables,
)
from ragproof_core.errors import describe, show_key, show_value, unknown_key_reason
from ragproof_core.json_limits import JsonLimitError, check_value

DEMO_ADAPTER = "ragproof_core.adapters.demo:DemoRAG"
SOURCE_MATCHES = ("chunk", "document")
JUDGE_TIMEOUT_S = 60.0
JUDGE_MAX_ATTEMPTS = 4
JUDGE_BACKOFF_S = 0.5
JUDGE_MODES = ("per_metric", "combined")

# Strict: a config value has one right type. inf/nan are never a setting.
_SCHEMA = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class ConfigError(ValueError):
    """Bad configuration: the message names the file and the key."""


def _list_as_tuple(value: Any) -> Any:
    # TOML and JSON have lists; the settings keep tuples so they stay hashable.
    return tuple(value) if isinstance(value, list) else value


_Names = Annotated[tuple[str, ...], BeforeValidator(_list_as_tuple)]


def _config_errors(table: str):
    """Turn the schema's ValidationError into a one-line ``ConfigError`` naming ``table.key``."""

    def decorate(cls):
        init = cls.__init__
        known = [f.name for f in dataclasses.fields(cls)]

        @functools.wraps(init)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as exc:
                raise ConfigError(describe(exc, prefix=table, known=known)) from None

        cls.__init__ = __init__
        return cls

    return decorate


# Each unit of concurrency is a thread for a sync adapter and a slot for the judge;
# each shard a Dagster step with its own process. Past these a run only thrashes.
MAX_CONCURRENCY = 1024
MAX_SHARDS = 256


@_config_errors("run")
@dataclass(frozen=True, slots=True, config=_SCHEMA)
class RunSettings:
    k: int = Field(default=5, ge=1, description="cut-off of the retrieval metrics")
    source_match: Literal["chunk", "document"] = Field(
        default="chunk",
        description='what counts as an expected source in retrieval: "chunk" or "document"',
    )
    concurrency: int = Field(
        default=16, ge=1, le=MAX_CONCURRENCY, description="adapter and judge calls in flight"
    )
    timeout_s: float = Field(default=60.0, gt=0, description="per adapter call, in seconds")
    # Metric names or shell-style patterns; empty selects every metric.
    metrics: _Names = Field(
        default=(),
        description="comma-separated metric names or shell-style patterns such as "
        "'retrieval.*' (default: every metric)",
    )
    shards: int = Field(
        default=1, ge=1, le=MAX_SHARDS, description="split the cases into this many steps"
    )

    def __post_init__(self) -> None:
        shipped = [p for p in self.metrics if not p.strip().startswith(CUSTOM_PREFIX)]
        if shipped:
            # Imported here: the registry imports the metric modules, which import settings.
            # Patterns of custom metrics are checked with the config's [[metric]] tables.
            from ragproof_core.metrics.registry import MetricSelectionError, select_metrics

            try:
                select_metrics(shipped)
            except MetricSelectionError as exc:
                raise ValueError(f"run.metrics: {exc}") from exc

    @property
    def selected_metrics(self) -> tuple[str, ...]:
        """The selected names, a run's stored selection (custom names spelled out) included."""
        spelled = tuple(p.strip() for p in self.metrics if p.strip().startswith(CUSTOM_PREFIX))
        return self.selection(spelled)

    def selection(self, custom: Sequence[str] = ()) -> tuple[str, ...]:
        """The selected metric names, shipped then ``custom`` (the run's own metrics);
        ``MetricSelectionError`` when a pattern matches none of them."""
        from ragproof_core.metrics.registry import REGISTRY
        from ragproof_core.metrics.spec import named_only

        return REGISTRY.with_metrics(named_only(name) for name in custom).select(self.metrics)


# The [run] keys, in declaration order: the command line's flags, the Dagster
# launch form's fields, the suites' keys and the stored run settings follow it.
RUN_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunSettings))


def run_key_help(name: str) -> str:
    """The declared description of a ``[run]`` key, for flags and the launch form."""
    return RunSettings.__pydantic_fields__[name].description or ""


def run_key_type(name: str) -> type:
    """The plain type of a ``[run]`` key's value (``int``, ``float``, ``str`` or ``tuple``),
    for forms that carry it outside the schema (command-line flags, Dagster config)."""
    return type(RunSettings.__pydantic_fields__[name].default)


def run_key_choices(name: str) -> tuple[str, ...] | None:
    """The allowed values of a ``[run]`` key declared as a ``Literal``, else None."""
    annotation = RunSettings.__pydantic_fields__[name].annotation
    return tuple(get_args(annotation)) if get_origin(annotation) is Literal else None


@_config_errors("judge")
@dataclass(frozen=True, slots=True, config=_SCHEMA)
class JudgeSettings:
    """The ``[judge]`` table; the environment (``JudgeEnv``) overrides it."""

    mode: Literal["per_metric", "combined"] = "per_metric"
    models: _Names = ()
    rpm: float | None = Field(default=None, gt=0)


@_config_errors("adapter")
@dataclass(frozen=True, slots=True, config=_SCHEMA)
class AdapterSpec:
    target: str = Field(default=DEMO_ADAPTER, min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)

    def __post_init__(self) -> None:
        # The options are stored as JSON and passed to the adapter: too deep a
        # value would raise RecursionError when first encoded, after the run began.
        try:
            check_value(self.options, "adapter.options")
        except JsonLimitError as exc:
            raise ValueError(str(exc)) from None


@dataclasses.dataclass(frozen=True, slots=True)
class Config:
    run: RunSettings = dataclasses.field(default_factory=RunSettings)
    adapter: AdapterSpec = dataclasses.field(default_factory=AdapterSpec)
    judge: JudgeSettings = dataclasses.field(default_factory=JudgeSettings)
    # The [[metric]] tables: metrics of your own (CONTRACT section 21).
    metrics: tuple[MetricTable, ...] = ()

    def __post_init__(self) -> None:
        self.selected_metrics()  # a pattern matching none of this config's metrics is bad input

    @property
    def custom_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.metrics)

    def selected_metrics(self) -> tuple[str, ...]:
        """The metric names this config selects, its own metrics included."""
        from ragproof_core.metrics.registry import MetricSelectionError

        try:
            return self.run.selection(self.custom_names)
        except MetricSelectionError as exc:
            raise ConfigError(f"run.metrics: {exc}") from None

    def with_overrides(
        self,
        *,
        adapter: str | None = None,
        options: Mapping[str, Any] | None = None,
        **run_keys: Any,
    ) -> Config:
        """Replace what is given (None means "keep"): any ``RUN_KEYS``, the adapter target
        and its options; each override is validated like the file's keys."""
        unknown = set(run_keys) - set(RUN_KEYS)
        if unknown:
            raise TypeError(f"with_overrides: unknown run key(s) {sorted(unknown)}")
        changes = {name: value for name, value in run_keys.items() if value is not None}
        if "metrics" in changes:
            changes["metrics"] = _list_as_tuple(changes["metrics"])
        run = dataclasses.replace(self.run, **changes) if changes else self.run
        spec = self.adapter
        if adapter is not None or options is not None:
            spec = AdapterSpec(
                self.adapter.target if adapter is None else adapter,
                dict(self.adapter.options if options is None else options),
            )
        return Config(run, spec, self.judge, self.metrics)


def run_settings_dict(run: RunSettings, custom: Sequence[str] = ()) -> dict[str, Any]:
    """The ``[run]`` table as stored in a run's manifest and ``config_json``; ``custom``:
    the names of the config's own metrics, which the stored selection spells out."""
    values = {name: getattr(run, name) for name in RUN_KEYS}
    values["metrics"] = list(run.selection(custom))
    return values


def run_settings_from_dict(data: Mapping[str, Any]) -> RunSettings:
    """Inverse of ``run_settings_dict``; manifests written before a key existed get its default."""
    return RunSettings(**data)


_TABLES: dict[str, type] = {"run": RunSettings, "adapter": AdapterSpec, "judge": JudgeSettings}
METRIC_TABLES = "metric"  # [[metric]]: an array of tables, parsed by metric_tables


def judge_settings_dict(judge: JudgeSettings) -> dict[str, Any]:
    """The ``[judge]`` table as stored in a run's manifest."""
    return {"mode": judge.mode, "models": list(judge.models), "rpm": judge.rpm}


def judge_settings_from_dict(data: Mapping[str, Any] | None) -> JudgeSettings:
    """Inverse of ``judge_settings_dict``; a manifest without the table gets the defaults."""
    values = dict(data or {})
    if "models" in values:
        values["models"] = tuple(values["models"])
    return JudgeSettings(**values)


def load_config(path: str | Path | None) -> Config:
    """Read ragproof.toml; a missing path means every default.

    Relative adapter option paths (``path``) are resolved against the config
    file's folder, so a config works from any working directory.
    """
    if path is None:
        return Config()
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such config file") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{path}: not a file") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read file ({exc.strerror or exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(f"{path}: not valid TOML (nested too deeply)") from None
    tables: dict[str, Any] = {}
    metric_tables: tuple[MetricTable, ...] = ()
    for name, table in raw.items():
        if name == METRIC_TABLES:
            try:
                metric_tables = parse_metric_tables(table, path.parent)
                check_functions(metric_tables)
            except MetricTableError as exc:
                raise ConfigError(f"{path}: {exc}") from None
            continue
        if name not in _TABLES:
            reason = unknown_key_reason(name, (*_TABLES, METRIC_TABLES), noun="table")
            raise ConfigError(f"{path}: {show_key(name)}: {reason}")
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {name}: expected a table, got {show_value(table)}")
        try:
            tables[name] = _TABLES[name](**table)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    adapter = tables.get("adapter", AdapterSpec())
    options = dict(adapter.options)
    if isinstance(options.get("path"), str) and not Path(options["path"]).is_absolute():
        options["path"] = str((path.parent / options["path"]).resolve())
    try:
        return Config(
            tables.get("run", RunSettings()),
            AdapterSpec(adapter.target, options),
            tables.get("judge", JudgeSettings()),
            metric_tables,
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


# JudgeEnv field -> the environment variable that sets it (CONTRACT sections 3, 12, 15).
JUDGE_ENV_VARS: dict[str, str] = {
    "model": "RAGPROOF_JUDGE_MODEL",
    "api_base": "RAGPROOF_JUDGE_API_BASE",
    "input_cost_per_mtok": "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK",
    "output_cost_per_mtok": "RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK",
    "max_cost_usd": "RAGPROOF_MAX_COST_USD",
    "timeout_s": "RAGPROOF_JUDGE_TIMEOUT_S",
    "max_attempts": "RAGPROOF_JUDGE_MAX_ATTEMPTS",
    "backoff_s": "RAGPROOF_JUDGE_BACKOFF_S",
    "mode": "RAGPROOF_JUDGE_MODE",
    "rpm": "RAGPROOF_JUDGE_RPM",
}


@dataclass(frozen=True, slots=True, config=_SCHEMA)
class JudgeEnv:
    """Judge settings read from the environment (metrics.md, CONTRACT section 3).

    API keys are deliberately absent: LiteLLM reads them from the environment
    itself, so they never pass through ragproof's records.
    """

    model: str | None = None
    api_base: str | None = None
    # None: not set; the judge is then priced by LiteLLM's price map, or not at all
    # (judge/pricing.py). Either one set prices the judge (the other counts as 0).
    input_cost_per_mtok: float | None = Field(default=None, ge=0)
    output_cost_per_mtok: float | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    # Transport: per-call timeout, attempts per call (429, 5xx, timeouts, refused
    # connections) and the first backoff delay, doubled per attempt up to 8 s.
    timeout_s: float = Field(default=JUDGE_TIMEOUT_S, gt=0)
    max_attempts: int = Field(default=JUDGE_MAX_ATTEMPTS, ge=1)
    # 0 is a meaningful backoff (retry at once).
    backoff_s: float = Field(default=JUDGE_BACKOFF_S, ge=0)
    # CONTRACT sections 12 and 15: per_metric or combined calls; requests per minute.
    mode: Literal["per_metric", "combined"] = "per_metric"
    rpm: float | None = Field(default=None, gt=0)
    # Set when RAGPROOF_JUDGE_MODE was given, so it wins over the [judge] table.
    mode_from_env: Literal["per_metric", "combined"] | None = None

    @property
    def models(self) -> tuple[str, ...]:
        """The jury: ``model`` may name several LiteLLM models separated by commas."""
        if self.model is None:
            return ()
        return tuple(part.strip() for part in self.model.split(",") if part.strip())

    def with_table(self, table: JudgeSettings) -> JudgeEnv:
        """Fill what the environment left unset from the ``[judge]`` table of ragproof.toml."""
        changes: dict[str, Any] = {}
        if self.model is None and table.models:
            changes["model"] = ",".join(table.models)
        if self.mode_from_env is None:
            changes["mode"] = table.mode
        if self.rpm is None and table.rpm is not None:
            changes["rpm"] = table.rpm
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> JudgeEnv:
        """Parse the variables with the same schema; numbers may be written as text here.

        An empty variable counts as unset. A bad value raises ``ConfigError``
        naming the variable: ``RAGPROOF_MAX_COST_USD: expected a number, got "abc"``.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name, variable in JUDGE_ENV_VARS.items():
            value = env.get(variable, "").strip()
            if value:
                values[name] = value
        if "mode" in values:
            values["mode_from_env"] = values["mode"]
        try:
            return _JUDGE_ENV.validate_python(values, strict=False)
        except ValidationError as exc:
            raise ConfigError(describe(exc, rename=JUDGE_ENV_VARS, noun="variable")) from None


_JUDGE_ENV = TypeAdapter(JudgeEnv)


def store_root(env: Mapping[str, str] | None = None) -> Path | str:
    """``RAGPROOF_STORE``: a local folder (a Path) or an fsspec URL such as ``s3://b/p`` (a str)."""
    env = os.environ if env is None else env
    location = env.get("RAGPROOF_STORE") or "data/store"
    return location if "://" in location else Path(location)
