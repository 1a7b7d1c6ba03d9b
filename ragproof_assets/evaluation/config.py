"""The launch form of an evaluation run: what the UI's Launchpad shows, and what the
command line, the launch sensor and the schedule fill in (``evaluate_run_config``).

The ``[run]`` keys are not declared here: ``EvalRunConfig`` gets one optional
field per ``RUN_KEYS`` entry of ``ragproof_core.config.settings.RunSettings`` (same
name, described by the declaration with its type and default), so a key added
there shows up in the launch form, the command line and the suites file at
once. Their Dagster type is ``Any`` on purpose: Dagster's own scalar checks
are looser than the settings' (its Float takes ``true`` as 1.0) and speak
another language, so every value reaches ``RunSettings``' strict schema as
given and a bad one fails the run with the command line's message
(``run.k: expected an integer, got true``) before anything is created.

What only the command line knows (a terminal to draw a progress bar on, an
adapter it has just built) travels as run tags, not in this form.
"""

import json
from typing import Any

import dagster as dg
from pydantic import Field

from ragproof_core.config import (
    DEMO_ADAPTER,
    RUN_KEYS,
    Config,
    RunSettings,
    expand_path,
    path_values,
    resolve_launch,
    run_key_choices,
    run_key_help,
    run_key_type,
)

EVAL_OP = "eval_dataset"
# Set by the command line and ragproof.evaluate only: where a person watches the run,
# PROGRESS_TERMINAL or PROGRESS_NOTEBOOK (evaluation/progress.py draws the bar there).
PROGRESS_TAG = "ragproof/progress"
PROGRESS_TERMINAL = "true"
PROGRESS_NOTEBOOK = "notebook"
PRECHECKED_TAG = "ragproof/prechecked"
# `ragproof run --resume R`: the run continues partition R in place (CONTRACT section 29).
RESUME_TAG = "ragproof/resume"


class LaunchForm(dg.Config):
    """Which dataset to evaluate against which adapter, and how."""

    dataset: str = Field(description="Dataset file (JSON Lines or Parquet), CONTRACT section 1.")
    config_file: str | None = Field(
        default=None,
        description="Optional ragproof.toml (default: none, every setting at its default); "
        "the keys below override it.",
    )
    adapter: str | None = Field(
        default=None,
        description="Adapter as package.module:Name "
        f"(default: the config file's, else {DEMO_ADAPTER}).",
    )
    adapter_options_json: str | None = Field(
        default=None,
        description="Adapter keyword options as a JSON object, replacing the config file's "
        "(default: the config file's, else none).",
    )
    no_cache: bool = Field(
        default=False,
        description="Bypass the judge cache: neither read nor write it (default: false).",
    )
    # Any, as the run keys are: the judge table's strict schema checks the value.
    judge_repeats: Any = Field(
        default=None,
        description="judge.repeats: send every judge request this many times and score "
        "the mean (CONTRACT section 27; an integer from 1 to 100; default the config "
        "file's, else 1).",
    )

    def dataset_file(self) -> str:
        """The dataset's path as the run opens it: ``dataset`` with ``${NAME}`` read now
        (``ConfigError`` naming ``dataset`` for a variable not set)."""
        return expand_path(self.dataset, "dataset")

    def path_secrets(self) -> list[str]:
        """What ``${NAME}`` gives the dataset's and the config file's paths: secrets of the
        run, as every expanded value is."""
        return path_values(self.dataset, self.config_file)

    def run_overrides(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in RUN_KEYS}

    def resolve(self) -> Config:
        """ragproof.toml (or the defaults) with this form's values over it, validated by the
        settings' strict schema (``ConfigError`` naming the key). A ``${NAME}`` in the
        config file's path is read now, as the run starts (a suite's, CONTRACT section 28)."""
        config_file = self.config_file and expand_path(self.config_file, "config_file")
        return resolve_launch(
            config_file,
            self.adapter,
            self.adapter_options_json,
            self.run_overrides(),
            judge_repeats=self.judge_repeats,
        )


_KIND = {
    int: "an integer",
    float: "a number",
    str: "a string",
    tuple: "a list of names",
    dict: "a table of strings, added to the config file's",
}


def run_key_description(name: str) -> str:
    """The form's text for a ``[run]`` key: what it is, what it takes, its default."""
    choices = run_key_choices(name)
    kind = " | ".join(choices) if choices else _KIND[run_key_type(name)]
    default = getattr(RunSettings(), name)
    if name == "metrics" and not default:
        shown = "every metric"
    else:
        shown = "none" if default is None else json.dumps(default)
    return (
        f"run.{name}: {run_key_help(name)} ({kind}; default {shown}, "
        "or the config file's value; set here, it overrides the file)"
    )


def _run_key_field(name: str):
    return Field(default=None, description=run_key_description(name))


# Built with the metaclass, exactly as a class statement would, from the run keys.
EvalRunConfig = type(LaunchForm)(
    "EvalRunConfig",
    (LaunchForm,),
    {
        "__module__": __name__,
        "__doc__": LaunchForm.__doc__,
        "__annotations__": dict.fromkeys(RUN_KEYS, Any),
        **{name: _run_key_field(name) for name in RUN_KEYS},
    },
)


def evaluate_run_config(form: LaunchForm, *, op: str = EVAL_OP, **extra: Any) -> dict[str, Any]:
    """The `evaluate` job's run config for ``form``: the one place it is built (command line,
    launch sensor, schedules, a suite's automation, tests). Only what the form sets is
    written, so the config file's values stay in force for every key left out. ``op``: the
    dataset step's op (a suite's is prefixed, ``shape.py``); ``extra`` is the rest of the
    run config (loggers, execution)."""
    fields = form.model_dump(exclude_defaults=True)
    return {"ops": {op: {"config": fields}}, **extra}
