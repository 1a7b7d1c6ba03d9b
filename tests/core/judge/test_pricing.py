"""Pricing the judge: the environment's prices, else LiteLLM's price map, else unknown;
and a budget over a judge nothing prices is refused where every entry point reads it."""

from __future__ import annotations

import pytest

from ragproof_core.config.settings import ConfigError
from ragproof_core.judge.environment import judge_environment
from ragproof_core.judge.pricing import Prices, litellm_cost_map, model_prices
from ragproof_core.judge.settings import JudgeEnv, JudgeSettings
from tests.assets.expected import UNPRICED_BUDGET

KNOWN = "openai/gpt-4o-mini"  # listed in LiteLLM's map as gpt-4o-mini


def test_the_environment_prices_win_and_one_of_them_is_enough():
    env = JudgeEnv(model=KNOWN, input_cost_per_mtok=2.0)
    assert model_prices(KNOWN, env) == Prices(2.0, 0.0, "environment")
    assert model_prices("openai/judge-test", env) == Prices(2.0, 0.0, "environment")


def test_litellm_prices_a_model_it_knows_under_its_provider_prefix():
    entry = litellm_cost_map()["gpt-4o-mini"]
    assert model_prices(KNOWN, JudgeEnv(model=KNOWN)) == Prices(
        entry["input_cost_per_token"] * 1_000_000,
        entry["output_cost_per_token"] * 1_000_000,
        "litellm",
    )


def test_a_model_nothing_prices_has_no_price():
    assert model_prices("openai/judge-test", JudgeEnv(model="openai/judge-test")) is None


def test_a_budget_nothing_can_price_is_refused_in_one_line_naming_the_variables():
    environ = {"RAGPROOF_JUDGE_MODEL": "openai/judge-test", "RAGPROOF_MAX_COST_USD": "1"}
    with pytest.raises(ConfigError) as err:
        judge_environment(environ=environ)
    assert str(err.value) == UNPRICED_BUDGET
    # The [judge] table's model counts as the environment's would.
    with pytest.raises(ConfigError):
        judge_environment(
            JudgeSettings(models=("openai/judge-test",)), {"RAGPROOF_MAX_COST_USD": "1"}
        )


@pytest.mark.parametrize(
    "extra",
    [
        {"RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "0.5"},
        {"RAGPROOF_JUDGE_MODEL": KNOWN},  # LiteLLM's price
        {"RAGPROOF_MAX_COST_USD": ""},  # no budget: the cost is merely unknown
        {"RAGPROOF_JUDGE_MODEL": ""},  # no judge: nothing to spend
    ],
    ids=["env_price", "litellm_price", "no_budget", "no_judge"],
)
def test_a_budget_that_can_bite_or_no_budget_is_accepted(extra):
    environ = {"RAGPROOF_JUDGE_MODEL": "openai/judge-test", "RAGPROOF_MAX_COST_USD": "1", **extra}
    assert judge_environment(environ=environ).model == (environ["RAGPROOF_JUDGE_MODEL"] or None)


def test_a_jury_names_only_its_unpriced_models():
    environ = {
        "RAGPROOF_JUDGE_MODEL": f"{KNOWN},openai/judge-test",
        "RAGPROOF_MAX_COST_USD": "1",
    }
    with pytest.raises(ConfigError, match="judge model openai/judge-test \\(LiteLLM"):
        judge_environment(environ=environ)
