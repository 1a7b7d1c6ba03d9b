"""What one judge model costs per million tokens, and where that price came from.

The environment's prices (RAGPROOF_JUDGE_INPUT_COST_PER_MTOK and
..._OUTPUT_COST_PER_MTOK) win; either one set prices every model (the other
counts as 0). Otherwise LiteLLM's own price map is used when it knows the
model: the map LiteLLM ships beside its code, which is exactly its
``litellm.model_cost`` here (``client.import_litellm`` keeps LiteLLM on the
local map), read as a file so that pricing a run never costs LiteLLM's import.
A model neither names is unpriced: its cost is unknown, never $0.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragproof_core.judge.settings import JUDGE_ENV_VARS, JudgeEnv

COST_MAP_FILE = "model_prices_and_context_window_backup.json"
PRICE_VARIABLES = (
    JUDGE_ENV_VARS["input_cost_per_mtok"],
    JUDGE_ENV_VARS["output_cost_per_mtok"],
)
# Printed wherever a cost would be shown for a judge nothing prices: unknown, never $0.
UNKNOWN_COST = f"cost unknown (no price for the judge model: set {' and '.join(PRICE_VARIABLES)})"


@dataclass(frozen=True, slots=True)
class Prices:
    input_per_mtok: float
    output_per_mtok: float
    source: str  # "environment" or "litellm"


def litellm_cost_map() -> Mapping[str, Any]:
    """LiteLLM's local price map (model name -> costs per token); empty without LiteLLM."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / COST_MAP_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def litellm_prices(model: str, cost_map: Mapping[str, Any]) -> Prices | None:
    """The map's price of ``model``, looked up as named, then without its provider
    prefix (``openai/gpt-4o-mini`` is listed as ``gpt-4o-mini``)."""
    names = [model]
    if "/" in model:
        names.append(model.split("/", 1)[1])
    for name in names:
        entry = cost_map.get(name)
        if not isinstance(entry, Mapping):
            continue
        per_input, per_output = (
            entry.get("input_cost_per_token"),
            entry.get("output_cost_per_token"),
        )
        if isinstance(per_input, int | float) and isinstance(per_output, int | float):
            return Prices(per_input * 1_000_000, per_output * 1_000_000, "litellm")
    return None


def env_prices(env: JudgeEnv) -> Prices | None:
    """The environment's prices, when either variable is set."""
    if env.input_cost_per_mtok is None and env.output_cost_per_mtok is None:
        return None
    return Prices(env.input_cost_per_mtok or 0.0, env.output_cost_per_mtok or 0.0, "environment")


def model_prices(
    model: str, env: JudgeEnv, cost_map: Mapping[str, Any] | None = None
) -> Prices | None:
    """What ``model`` costs: the environment's prices, else LiteLLM's, else None (unknown)."""
    given = env_prices(env)
    if given is not None:
        return given
    return litellm_prices(model, litellm_cost_map() if cost_map is None else cost_map)


def unpriced_models(env: JudgeEnv) -> list[str]:
    """The judge's models that nothing prices (each a jury member)."""
    if env_prices(env) is not None:
        return []
    cost_map = litellm_cost_map()
    return [model for model in env.models if litellm_prices(model, cost_map) is None]
