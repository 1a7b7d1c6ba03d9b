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


class ConfigError(ValueError):
    """Bad configuration: the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    k: int = 5
    source_match: str = "chunk"
    concurrency: int = 16
    timeout_s: float = 60.0

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


@dataclass(frozen=True, slots=True)
class AdapterSpec:
    target: str = DEMO_ADAPTER
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Config:
    run: RunSettings = field(default_factory=RunSettings)
    adapter: AdapterSpec = field(default_factory=AdapterSpec)

    def with_overrides(
        self,
        *,
        k: int | None = None,
        source_match: str | None = None,
        adapter: str | None = None,
    ) -> Config:
        run = self.run
        if k is not None:
            run = replace(run, k=k)
        if source_match is not None:
            run = replace(run, source_match=source_match)
        spec = self.adapter if adapter is None else AdapterSpec(adapter, dict(self.adapter.options))
        return Config(run, spec)


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
    known = {"k", "source_match", "concurrency", "timeout_s"}
    unknown = set(run_raw) - known
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [run]: {', '.join(sorted(unknown))}")
    try:
        run = RunSettings(**run_raw)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    adapter_raw = raw.get("adapter", {})
    options = dict(adapter_raw.get("options", {}))
    if isinstance(options.get("path"), str) and not Path(options["path"]).is_absolute():
        options["path"] = str((path.parent / options["path"]).resolve())
    adapter = AdapterSpec(adapter_raw.get("target", DEMO_ADAPTER), options)
    return Config(run, adapter)


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
        )


def _or_default(value: float | None, default: float) -> float:
    # 0 is a meaningful backoff (retry at once), so only a missing value falls back.
    return default if value is None else value


def store_root(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("RAGPROOF_STORE") or "data/store")
