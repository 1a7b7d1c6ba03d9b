"""The Python surface's tests share one store a module: a few Dagster runs made once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.assets.expected import RECORDED

CASES = RECORDED / "cases.jsonl"
CONFIG = RECORDED / "ragproof.toml"
WORSE_CONFIG = RECORDED / "ragproof_worse.toml"


@pytest.fixture(scope="module")
def module_home(tmp_path_factory) -> tuple[Path, Path]:
    """A store and a Dagster home for the module's runs, set in the environment while
    its shared runs are made (the function-scoped homes of tests/conftest.py are not
    set up yet when a module fixture runs)."""
    store = tmp_path_factory.mktemp("python-store")
    home = tmp_path_factory.mktemp("python-dagster-home")
    return store, home


@pytest.fixture(scope="module")
def module_env(module_home):
    store, home = module_home
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGPROOF_STORE", str(store))
        patch.setenv("DAGSTER_HOME", str(home))
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        for name in ("RAGPROOF_JUDGE_MODEL", "RAGPROOF_MAX_COST_USD"):
            patch.delenv(name, raising=False)
        yield store, home
