"""Run settings: the ``[run]``, ``[adapter]``, ``[judge]`` and ``[traces]`` tables of ragproof.toml
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
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import Field
from pydantic.dataclasses import dataclass

from ragproof_core.config.gate import GATE, Floor, parse_gate
from ragproof_core.config.identity import check_name, check_tags
from ragproof_core.config.traces import TracesSettings
from ragproof_core.errors import ConfigError, show_key, show_value, unknown_key_reason
from ragproof_core.json_limits import JsonLimitError, check_value
from ragproof_core.judge.settings import JudgeSettings
from ragproof_core.metrics.custom_tables import PREFIX as CUSTOM_PREFIX
from ragproof_core.metrics.custom_tables import (
    MetricTable,
    MetricTableError,
    check_functions,
    parse_metric_tables,
)
from ragproof_core.metrics.registry import REGISTRY, MetricSelectionError
from ragproof_core.metrics.spec import DEFAULT_PARAMS, SOURCE_MATCHES, named_only
from ragproof_core.settings_schema import STRICT, Names, list_as_tuple, table_errors

__all__ = [
    "DEMO_ADAPTER",
    "MAX_CONCURRENCY",
    "MAX_REPEATS",
    "MAX_SHARDS",
    "METRIC_TABLES",
    "RUN_KEYS",
    "SOURCE_MATCHES",
    "AdapterSpec",
    "Config",
    "ConfigError",
    "RunSettings",
    "load_config",
    "run_key_choices",
    "run_key_help",
    "run_key_type",
    "run_settings_dict",
    "run_settings_from_dict",
    "store_root",
]

DEMO_ADAPTER = "ragproof_core.adapters.demo:DemoRAG"

# Each unit of concurrency is a thread for a sync adapter and a slot for the judge;
# each shard a Dagster step with its own process. Past these a run only thrashes.
MAX_CONCURRENCY = 1024
MAX_SHARDS = 256
# CONTRACT section 27: trials per case.
MAX_REPEATS = 100


@table_errors("run")
@dataclass(frozen=True, slots=True, config=STRICT)
class RunSettings:
    k: int = Field(default=DEFAULT_PARAMS.k, ge=1, description="cut-off of the retrieval metrics")
    source_match: Literal["chunk", "document"] = Field(
        default=DEFAULT_PARAMS.source_match,
        description='what counts as an expected source in retrieval: "chunk" or "document"',
    )
    concurrency: int = Field(
        default=16, ge=1, le=MAX_CONCURRENCY, description="adapter and judge calls in flight"
    )
    timeout_s: float = Field(default=60.0, gt=0, description="per adapter call, in seconds")
    # Metric names or shell-style patterns; empty selects every metric.
    metrics: Names = Field(
        default=(),
        description="comma-separated metric names or shell-style patterns such as "
        "'retrieval.*' (default: every metric)",
    )
    shards: int = Field(
        default=1, ge=1, le=MAX_SHARDS, description="split the cases into this many steps"
    )
    # The run's identity (CONTRACT section 25, config/identity.py): labels stored with the
    # run, outside its config digest.
    name: str | None = Field(
        default=None, description="a name stored with the run, to find it again (runs --name)"
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="KEY=VALUE labels stored with the run (runs --tag KEY=VALUE filters by them)",
    )
    # Repeated trials (CONTRACT section 27).
    repeats: int = Field(
        default=1,
        ge=1,
        le=MAX_REPEATS,
        description="trials per case: the adapter is called this many times for each case "
        "(a conversation, whole), each trial scored like a case",
    )
    pass_k: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPEATS,
        description="k of pass@k and pass^k over each case's trials (default: run.repeats)",
    )

    def __post_init__(self) -> None:
        check_name(self.name)
        check_tags(self.tags)
        if self.pass_k is not None and self.pass_k > self.repeats:
            raise ValueError(
                f"run.pass_k: at most run.repeats ({self.repeats}), got {self.pass_k}: "
                "no case would have k trials"
            )
        shipped = [p for p in self.metrics if not p.strip().startswith(CUSTOM_PREFIX)]
        if shipped:
            # Patterns of custom metrics are checked with the config's [[metric]] tables.
            try:
                REGISTRY.select(shipped)
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
        registry = REGISTRY.with_metrics(named_only(name) for name in custom)
        chosen = registry.select(self.metrics)
        if not self.metrics:
            # A conversation's own metrics (CONTRACT section 16) leave rows only where a
            # run has conversations, so a run that selects nothing scores them too.
            chosen = (*chosen, *registry.conversation_names)
        return chosen

    @property
    def trials_k(self) -> int:
        """The k of pass@k and pass^k: ``pass_k``, else every trial."""
        return self.repeats if self.pass_k is None else self.pass_k


# The [run] keys, in declaration order: the command line's flags, the Dagster
# launch form's fields, the suites' keys and the stored run settings follow it.
RUN_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunSettings))


def run_key_help(name: str) -> str:
    """The declared description of a ``[run]`` key, for flags and the launch form."""
    return RunSettings.__pydantic_fields__[name].description or ""


def run_key_type(name: str) -> type:
    """The plain type of a ``[run]`` key's value (``int``, ``float``, ``str``, ``tuple`` or
    ``dict``), for forms that carry it outside the schema (command-line flags, Dagster
    config). A key whose default is None (``name``) holds a ``str``."""
    declared = RunSettings.__pydantic_fields__[name]
    if declared.default_factory is not None:
        return type(declared.default_factory())
    if declared.default is not None:
        return type(declared.default)
    # An optional value: the type beside None (``int | None`` holds an int).
    kinds = [kind for kind in get_args(declared.annotation) if kind is not type(None)]
    return kinds[0] if len(kinds) == 1 and isinstance(kinds[0], type) else str


def run_key_choices(name: str) -> tuple[str, ...] | None:
    """The allowed values of a ``[run]`` key declared as a ``Literal``, else None."""
    annotation = RunSettings.__pydantic_fields__[name].annotation
    return tuple(get_args(annotation)) if get_origin(annotation) is Literal else None


@table_errors("adapter")
@dataclass(frozen=True, slots=True, config=STRICT)
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
    # The [traces] table: the trace sensor's sampling and metrics (CONTRACT section 18).
    traces: TracesSettings = dataclasses.field(default_factory=TracesSettings)
    # The [gate] table: floors the run must clear (CONTRACT section 25).
    gate: tuple[Floor, ...] = ()
    # The file it was read from, as its errors name it (None: the defaults).
    source: str | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        selected = self.selected_metrics()  # a pattern matching none is bad input
        self._check_gate(selected)
        try:
            dataclasses.replace(self.run, metrics=self.traces.metrics).selection(self.custom_names)
        except (MetricSelectionError, ValueError) as exc:
            raise ConfigError(f"traces.metrics: {str(exc).removeprefix('run.metrics: ')}") from None

    def _check_gate(self, selected: Sequence[str]) -> None:
        """Each floor names a metric this config scores: a floor on a metric the run
        never scores would fail every run, and a typo would go unnoticed until then."""
        registry = REGISTRY.with_metrics(named_only(name) for name in self.custom_names)
        chosen = set(selected)
        for floor in self.gate:
            where = f"{GATE}.{show_key(floor.metric)}"
            if registry.spec(floor.metric) is None:
                known = [m.name for m in registry.metrics]
                raise ConfigError(
                    f"{where}: {unknown_key_reason(floor.metric, known, noun='metric')}"
                )
            if floor.metric not in chosen:
                raise ConfigError(
                    f"{where}: the metric is not selected (run.metrics): the floor would "
                    "fail every run"
                )

    @property
    def custom_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.metrics)

    def selected_metrics(self) -> tuple[str, ...]:
        """The metric names this config selects, its own metrics included."""
        try:
            return self.run.selection(self.custom_names)
        except MetricSelectionError as exc:
            raise ConfigError(f"run.metrics: {exc}") from None

    def with_overrides(
        self,
        *,
        adapter: str | None = None,
        options: Mapping[str, Any] | None = None,
        judge_repeats: int | None = None,
        **run_keys: Any,
    ) -> Config:
        """Replace what is given (None means "keep"): any ``RUN_KEYS``, the adapter target
        and its options, ``[judge] repeats``; each override is validated like the file's
        keys."""
        unknown = set(run_keys) - set(RUN_KEYS)
        if unknown:
            raise TypeError(f"with_overrides: unknown run key(s) {sorted(unknown)}")
        changes = {name: value for name, value in run_keys.items() if value is not None}
        if "metrics" in changes:
            changes["metrics"] = list_as_tuple(changes["metrics"])
        if isinstance(changes.get("tags"), Mapping):
            # Tags given here join the file's (a key given both ways takes this value).
            changes["tags"] = {**self.run.tags, **changes["tags"]}
        run = dataclasses.replace(self.run, **changes) if changes else self.run
        spec = self.adapter
        if adapter is not None or options is not None:
            spec = AdapterSpec(
                self.adapter.target if adapter is None else adapter,
                dict(self.adapter.options if options is None else options),
            )
        judge = self.judge
        if judge_repeats is not None:
            judge = dataclasses.replace(judge, repeats=judge_repeats)
        return Config(run, spec, judge, self.metrics, self.traces, self.gate, self.source)


# [run] keys added after runs were first stored, with their defaults: a run leaving one at
# its default stores its settings without it, so its config_json, config digest and
# settings hash are those of a run set up alike before the key existed.
LATER_RUN_KEYS: dict[str, Any] = {"repeats": 1, "pass_k": None}


def run_settings_dict(run: RunSettings, custom: Sequence[str] = ()) -> dict[str, Any]:
    """The ``[run]`` table as stored in a run's manifest and ``config_json``; ``custom``:
    the names of the config's own metrics, which the stored selection spells out."""
    values = {
        name: getattr(run, name)
        for name in RUN_KEYS
        if name not in LATER_RUN_KEYS or getattr(run, name) != LATER_RUN_KEYS[name]
    }
    values["metrics"] = list(run.selection(custom))
    return values


def run_settings_from_dict(data: Mapping[str, Any]) -> RunSettings:
    """Inverse of ``run_settings_dict``; manifests written before a key existed get its default."""
    return RunSettings(**data)


_TABLES: dict[str, type] = {
    "run": RunSettings,
    "adapter": AdapterSpec,
    "judge": JudgeSettings,
    "traces": TracesSettings,
}
METRIC_TABLES = "metric"  # [[metric]]: an array of tables, parsed by metric_tables


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
    gate: tuple[Floor, ...] = ()
    for name, table in raw.items():
        if name == GATE:
            try:
                gate = parse_gate(table)
            except ConfigError as exc:
                raise ConfigError(f"{path}: {exc}") from None
            continue
        if name == METRIC_TABLES:
            try:
                metric_tables = parse_metric_tables(table, path.parent)
                check_functions(metric_tables)
            except MetricTableError as exc:
                raise ConfigError(f"{path}: {exc}") from None
            continue
        if name not in _TABLES:
            reason = unknown_key_reason(name, (*_TABLES, METRIC_TABLES, GATE), noun="table")
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
            tables.get("traces", TracesSettings()),
            gate,
            str(path),
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def store_root(env: Mapping[str, str] | None = None) -> Path | str:
    """``RAGPROOF_STORE``: a local folder (a Path) or an fsspec URL such as ``s3://b/p`` (a str)."""
    env = os.environ if env is None else env
    location = env.get("RAGPROOF_STORE") or "data/store"
    return location if "://" in location else Path(location)
