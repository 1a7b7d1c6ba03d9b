"""The launch form of an evaluation run: what the UI's config editor shows and
what the command line and the schedule fill in.

The ``[run]`` keys are not declared here: ``EvalRunConfig`` gets one optional
field per ``RUN_KEYS`` entry of ``ragproof_core.config.settings.RunSettings`` (same
name, plain type, described by the declaration), so a key added there shows
up in the launch form, the command line and the suites file at once.
"""

import json
from typing import Any

import dagster as dg
from pydantic import Field

from ragproof_core.config.settings import (
    DEMO_ADAPTER,
    RUN_KEYS,
    Config,
    ConfigError,
    load_config,
    run_key_choices,
    run_key_help,
    run_key_type,
)


class LaunchForm(dg.Config):
    """Which dataset to evaluate against which adapter, and how."""

    dataset: str = Field(description="Dataset file (JSON Lines or Parquet), CONTRACT section 1.")
    config_file: str | None = Field(
        default=None, description="Optional ragproof.toml; the keys below override it."
    )
    adapter: str | None = Field(
        default=None,
        description="Adapter as package.module:Name "
        f"(default from the config file, else {DEMO_ADAPTER}).",
    )
    adapter_options_json: str | None = Field(
        default=None,
        description="Adapter keyword options as a JSON object, replacing the config file's.",
    )
    no_cache: bool = Field(
        default=False, description="Bypass the judge cache: neither read nor write it."
    )
    progress: bool = Field(
        default=False,
        description="Draw a progress bar on the controlling terminal, if any "
        "(the command line sets it when run in a terminal).",
    )
    prechecked: bool = Field(
        default=False,
        description="Set by the command line, which built the adapter (validating its input, "
        "e.g. a recording) just before launching: the dataset step then does not build it "
        "again. Leave false in the UI.",
    )

    def run_overrides(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in RUN_KEYS}

    def resolve(self) -> Config:
        """ragproof.toml (or the defaults) with this form's values over it, validated."""
        options = None
        if self.adapter_options_json:
            try:
                options = json.loads(self.adapter_options_json)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"adapter_options_json: not valid JSON ({exc.msg})") from None
            if not isinstance(options, dict):
                raise ConfigError("adapter_options_json: expected a JSON object")
        return load_config(self.config_file).with_overrides(
            adapter=self.adapter, options=options, **self.run_overrides()
        )


_LAUNCH_TYPES = {int: int | None, float: float | None, str: str | None, tuple: list[str] | None}


def _run_key_field(name: str):
    choices = run_key_choices(name)
    allowed = f" ({' | '.join(choices)})" if choices else ""
    return Field(
        default=None, description=f"run.{name}: {run_key_help(name)}{allowed}; overrides the file"
    )


# Built with the metaclass, exactly as a class statement would, from the run keys.
EvalRunConfig = type(LaunchForm)(
    "EvalRunConfig",
    (LaunchForm,),
    {
        "__module__": __name__,
        "__doc__": LaunchForm.__doc__,
        "__annotations__": {name: _LAUNCH_TYPES[run_key_type(name)] for name in RUN_KEYS},
        **{name: _run_key_field(name) for name in RUN_KEYS},
    },
)
