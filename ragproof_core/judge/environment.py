"""The judge's environment as every judge-using entry point reads it: ``run``
(its preflight), the dataset step of a UI or scheduled launch, the evaluation
steps, ``generate qa``, ``calibrate`` and whatever comes next (``probe``).

One place, so a check made here holds for them all: a budget
(RAGPROOF_MAX_COST_USD) that cannot price the judge could never stop it, so it
is bad input, refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragproof_core.errors import ConfigError
from ragproof_core.judge.pricing import PRICE_VARIABLES, unpriced_models
from ragproof_core.judge.settings import JUDGE_ENV_VARS, JudgeEnv, JudgeSettings


def judge_environment(
    table: JudgeSettings | None = None, environ: Mapping[str, str] | None = None
) -> JudgeEnv:
    """The environment's judge settings, filled from the ``[judge]`` table of
    ragproof.toml when given; raises ``ConfigError`` (one line) for a bad
    variable or a budget without a price for every judge model."""
    env = JudgeEnv.from_env(environ)
    if table is not None:
        env = env.with_table(table)
    check_budget_is_priced(env)
    return env


def check_budget_is_priced(env: JudgeEnv) -> None:
    if env.max_cost_usd is None:
        return
    missing = unpriced_models(env)
    if missing:
        raise ConfigError(
            f"{JUDGE_ENV_VARS['max_cost_usd']} is set, but nothing prices the judge model "
            f"{', '.join(missing)} (LiteLLM has no price for it), so the budget could never "
            f"stop a run: set {' and '.join(PRICE_VARIABLES)}"
        )
