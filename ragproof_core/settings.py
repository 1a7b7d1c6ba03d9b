"""Run settings: the ``[run]`` and ``[adapter]`` tables of ragproof.toml (CONTRACT section 3)
and the environment variables that configure the judge and the store."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEMO_ADAPTER = "ragproof_core.adapters.demo:DemoRAG"
SOURCE_MATCHES = ("chunk", "document")
JUDGE_TIMEOUT_S = 60.0
JUDGE_MAX_ATTEMPTS = 4
JUDGE_BACKOFF_S = 0.5
JUDGE_MODES = ("per_metric", "combined")


class ConfigError(ValueError):
    """Bad configuration: the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    k: int = 5
    source_match: str = "chunk"
    concurrency: int = 16
    timeout_s: float = 60.0
    # Metric names or shell-style patterns; empty selects every metric.
    metrics: tuple[str, ...] = ()
    shards: int = 1

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"run.k must be at least 1, got {self.k}")
        if self.source_match not in SOURCE_MATCHES:
            raise ConfigError(
                f"run.source_match must be one of {', '.join(SOURCE_MATCHES)}, "
                f"got {self.source_match!r}"
            )
        if self.concurrency < 1:
            raise ConfigError(f"run.concurrency must be at least 1, got {self.concurrency}")
        if self.timeout_s <= 0:
            raise ConfigError(f"run.timeout_s must be positive, got {self.timeout_s}")
        if self.shards < 1:
            raise ConfigError(f"run.shards must be at least 1, got {self.shards}")
        if self.metrics:
            # Imported here: the registry imports the metric modules, which import settings.
            from ragproof_core.metrics.registry import MetricSelectionError, select_metrics

            try:
                select_metrics(self.metrics)
            except MetricSelectionError as exc:
                raise ConfigError(f"run.metrics: {exc}") from exc

    @property
    def selected_metrics(self) -> tuple[str, ...]:
        from ragproof_core.metrics.registry import select_metrics

        return select_metrics(self.metrics)


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """The ``[judge]`` table; the environment (``JudgeEnv``) overrides it."""

    mode: str = "per_metric"
    models: tuple[str, ...] = ()
    rpm: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in JUDGE_MODES:
            raise ConfigError(
                f"judge.mode must be one of {', '.join(JUDGE_MODES)}, got {self.mode!r}"
            )
        if self.rpm is not None and self.rpm <= 0:
            raise ConfigError(f"judge.rpm must be positive, got {self.rpm}")


@dataclass(frozen=True, slots=True)
class AdapterSpec:
    target: str = DEMO_ADAPTER
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Config:
    run: RunSettings = field(default_factory=RunSettings)
    adapter: AdapterSpec = field(default_factory=AdapterSpec)
    judge: JudgeSettings = field(default_factory=JudgeSettings)

    def with_overrides(
        self,
        *,
        k: int | None = None,
        source_match: str | None = None,
        adapter: str | None = None,
        metrics: tuple[str, ...] | None = None,
        shards: int | None = None,
    ) -> Config:
        changes = {
            name: value
            for name, value in (
                ("k", k),
                ("source_match", source_match),
                ("metrics", metrics),
                ("shards", shards),
            )
            if value is not None
        }
        run = replace(self.run, **changes) if changes else self.run
        spec = self.adapter if adapter is None else AdapterSpec(adapter, dict(self.adapter.options))
        return Config(run, spec, self.judge)


def run_settings_dict(run: RunSettings) -> dict[str, Any]:
    """The ``[run]`` table as stored in a run's manifest and ``config_json``."""
    return {
        "k": run.k,
        "source_match": run.source_match,
        "concurrency": run.concurrency,
        "timeout_s": run.timeout_s,
        "metrics": list(run.selected_metrics),
        "shards": run.shards,
    }


def run_settings_from_dict(data: Mapping[str, Any]) -> RunSettings:
    """Inverse of ``run_settings_dict``; manifests written before a key existed get its default."""
    values = dict(data)
    if "metrics" in values:
        values["metrics"] = tuple(values["metrics"])
    return RunSettings(**values)


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
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    run_raw = raw.get("run", {})
    known = {"k", "source_match", "concurrency", "timeout_s", "metrics", "shards"}
    unknown = set(run_raw) - known
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [run]: {', '.join(sorted(unknown))}")
    if "metrics" in run_raw:
        run_raw = {**run_raw, "metrics": tuple(run_raw["metrics"])}
    judge_raw = dict(raw.get("judge", {}))
    if "models" in judge_raw:
        judge_raw["models"] = tuple(judge_raw["models"])
    try:
        run = RunSettings(**run_raw)
        judge = JudgeSettings(**judge_raw)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    adapter_raw = raw.get("adapter", {})
    options = dict(adapter_raw.get("options", {}))
    if isinstance(options.get("path"), str) and not Path(options["path"]).is_absolute():
        options["path"] = str((path.parent / options["path"]).resolve())
    adapter = AdapterSpec(adapter_raw.get("target", DEMO_ADAPTER), options)
    return Config(run, adapter, judge)


@dataclass(frozen=True, slots=True)
class JudgeEnv:
    """Judge settings read from the environment (metrics.md, CONTRACT section 3).

    API keys are deliberately absent: LiteLLM reads them from the environment
    itself, so they never pass through ragproof's records.
    """

    model: str | None = None
    api_base: str | None = None
    input_cost_per_mtok: float = 0.0
    output_cost_per_mtok: float = 0.0
    max_cost_usd: float | None = None
    # Transport: per-call timeout, attempts per call (429, 5xx, timeouts, refused
    # connections) and the first backoff delay, doubled per attempt up to 8 s.
    timeout_s: float = JUDGE_TIMEOUT_S
    max_attempts: int = JUDGE_MAX_ATTEMPTS
    backoff_s: float = JUDGE_BACKOFF_S
    # CONTRACT sections 12 and 15: per_metric or combined calls; requests per minute.
    mode: str = "per_metric"
    rpm: float | None = None
    # Set when RAGPROOF_JUDGE_MODE was given, so it wins over the [judge] table.
    mode_from_env: str | None = None

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
        return replace(self, **changes) if changes else self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> JudgeEnv:
        env = os.environ if env is None else env

        def number(name: str) -> float | None:
            value = env.get(name, "").strip()
            if not value:
                return None
            try:
                return float(value)
            except ValueError as exc:
                raise ConfigError(f"{name} must be a number, got {value!r}") from exc

        return cls(
            model=env.get("RAGPROOF_JUDGE_MODEL", "").strip() or None,
            api_base=env.get("RAGPROOF_JUDGE_API_BASE", "").strip() or None,
            input_cost_per_mtok=number("RAGPROOF_JUDGE_INPUT_COST_PER_MTOK") or 0.0,
            output_cost_per_mtok=number("RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK") or 0.0,
            max_cost_usd=number("RAGPROOF_MAX_COST_USD"),
            timeout_s=number("RAGPROOF_JUDGE_TIMEOUT_S") or JUDGE_TIMEOUT_S,
            max_attempts=int(number("RAGPROOF_JUDGE_MAX_ATTEMPTS") or JUDGE_MAX_ATTEMPTS),
            backoff_s=_or_default(number("RAGPROOF_JUDGE_BACKOFF_S"), JUDGE_BACKOFF_S),
            mode=_judge_mode(env) or "per_metric",
            mode_from_env=_judge_mode(env),
            rpm=number("RAGPROOF_JUDGE_RPM"),
        )


def _judge_mode(env: Mapping[str, str]) -> str | None:
    value = env.get("RAGPROOF_JUDGE_MODE", "").strip()
    if not value:
        return None
    if value not in JUDGE_MODES:
        raise ConfigError(
            f"RAGPROOF_JUDGE_MODE must be one of {', '.join(JUDGE_MODES)}, got {value!r}"
        )
    return value


def _or_default(value: float | None, default: float) -> float:
    # 0 is a meaningful backoff (retry at once), so only a missing value falls back.
    return default if value is None else value


def store_root(env: Mapping[str, str] | None = None) -> Path | str:
    """``RAGPROOF_STORE``: a local folder (a Path) or an fsspec URL such as ``s3://b/p`` (a str)."""
    env = os.environ if env is None else env
    location = env.get("RAGPROOF_STORE") or "data/store"
    return location if "://" in location else Path(location)
