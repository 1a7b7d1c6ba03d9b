"""The judge's environment as every judge-using entry point reads it: ``run``
(its preflight), the dataset step of a UI or scheduled launch, the evaluation
steps, ``generate qa``, ``calibrate`` and whatever comes next (``probe``).

One place, so a check made here holds for them all: a budget
(RAGPROOF_MAX_COST_USD) that cannot price the judge could never stop it, so it
is bad input, refused before anything runs. And a command that will call the
judge asks LiteLLM first whether it can build a request for every judge model
(``check_credentials``, CONTRACT section 24): a key that is not set fails every
request the same way, so it is refused before anything is stored.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragproof_core.errors import ConfigError
from ragproof_core.judge.client import import_litellm
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


def check_credentials(env: JudgeEnv) -> None:
    """Refuse (``ConfigError``, one line naming the variable) a judge model LiteLLM
    cannot build a request for: its provider's credential variables unset, or a model
    string whose provider LiteLLM cannot tell. Every model of a jury is checked. A no-op
    without a judge. LiteLLM reads the variables from the process's environment."""
    for model in dict.fromkeys(env.models):
        problem = credential_problem(model, env.api_base)
        if problem is not None:
            raise ConfigError(problem)


def credential_problem(model: str, api_base: str | None = None) -> str | None:
    """Why LiteLLM cannot build a request for ``model`` (the line ``check_credentials``
    raises), or None when it can."""
    litellm = import_litellm()
    variable = JUDGE_ENV_VARS["model"]
    try:
        litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # noqa: BLE001 - LiteLLM says "provider not known" many ways
        return (
            f"{variable}: LiteLLM cannot tell which provider serves {model!r}; name it as "
            "provider/model (openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, "
            "ollama/llama3, ...)"
        )
    found = litellm.validate_environment(model=model, api_base=api_base)
    missing = [name for name in found.get("missing_keys") or () if name]
    if not missing:
        return None
    names = " and ".join(missing)
    verb = "is" if len(missing) == 1 else "are"
    line = f"{variable}: {model} needs {names}, which {verb} not set (LiteLLM reads it)"
    if api_base is not None:
        line += (
            f"; with {JUDGE_ENV_VARS['api_base']} naming a local server any non-empty value "
            f"serves: export {missing[0]}=local"
        )
    return line
