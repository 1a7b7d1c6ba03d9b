"""The judge's settings: the ``[judge]`` table of ragproof.toml (``JudgeSettings``)
and the environment variables that configure the judge (``JudgeEnv``, CONTRACT
sections 3, 12 and 15), declared with the strict schema of every settings table.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, TypeAdapter, ValidationError, field_validator
from pydantic.dataclasses import dataclass

from ragproof_core.errors import ConfigError, describe
from ragproof_core.settings_schema import STRICT, Names, table_errors

JUDGE_TIMEOUT_S = 60.0
JUDGE_MAX_ATTEMPTS = 4
JUDGE_BACKOFF_S = 0.5
JUDGE_MODES = ("per_metric", "combined")
# CONTRACT section 27: requests per judge request.
MAX_JUDGE_REPEATS = 100


@table_errors("judge")
@dataclass(frozen=True, slots=True, config=STRICT)
class JudgeSettings:
    """The ``[judge]`` table; the environment (``JudgeEnv``) overrides it."""

    mode: Literal["per_metric", "combined"] = "per_metric"
    models: Names = ()
    rpm: float | None = Field(default=None, gt=0)
    # CONTRACT section 27: every judge request sent this many times, the scores averaged.
    repeats: int = Field(default=1, ge=1, le=MAX_JUDGE_REPEATS)


def judge_settings_dict(judge: JudgeSettings) -> dict[str, Any]:
    """The ``[judge]`` table as stored in a run's manifest; ``repeats`` only when set, so a
    run without judge repeats stores (and hashes) its table as before the key existed."""
    stored: dict[str, Any] = {"mode": judge.mode, "models": list(judge.models), "rpm": judge.rpm}
    if judge.repeats != 1:
        stored["repeats"] = judge.repeats
    return stored


def judge_settings_from_dict(data: Mapping[str, Any] | None) -> JudgeSettings:
    """Inverse of ``judge_settings_dict``; a manifest without the table gets the defaults."""
    values = dict(data or {})
    if "models" in values:
        values["models"] = tuple(values["models"])
    return JudgeSettings(**values)


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


def api_base_problem(url: str | None) -> str | None:
    """Why LiteLLM cannot send requests to ``url``, or None. Credentials in the URL are
    refused before anything is stored (CONTRACT section 24: a request LiteLLM cannot
    build), never tried: LiteLLM's HTTP client will not send a user name or password in
    the URL beside the provider key's Authorization header, and the OpenAI client puts
    the request's path after a query string (``/v1?key=.../chat/completions``), so
    every request would fail and the run end ``aborted:judge``. Says nothing of the
    value: it holds secrets."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None  # not a URL: LiteLLM's own error says so
    if parts.username is not None or parts.password is not None:
        return (
            "credentials in the URL are not sent (LiteLLM's HTTP client refuses a user "
            "name or password in the URL beside the provider's key): give the server's "
            "address alone, and the key in the provider's variable"
        )
    if parts.query:
        return (
            "a query string is not kept (LiteLLM adds the request's path after it): give "
            "the server's address alone, and a key in the provider's variable"
        )
    return None


@dataclass(frozen=True, slots=True, config=STRICT)
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
    # [judge] repeats (--judge-repeats): no variable sets it.
    repeats: int = Field(default=1, ge=1, le=MAX_JUDGE_REPEATS)

    @field_validator("api_base")
    @classmethod
    def _address_alone(cls, value: str | None) -> str | None:
        problem = api_base_problem(value)
        if problem:
            raise ValueError(problem)
        return value

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
        if table.repeats != self.repeats:
            changes["repeats"] = table.repeats
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
            return JUDGE_ENV_SCHEMA.validate_python(values, strict=False)
        except ValidationError as exc:
            raise ConfigError(describe(exc, rename=JUDGE_ENV_VARS, noun="variable")) from None


JUDGE_ENV_SCHEMA = TypeAdapter(JudgeEnv)
