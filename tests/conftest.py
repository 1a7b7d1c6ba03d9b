"""Shared test set-up: every test gets its own store and Dagster home, and no judge
unless it asks for one, whatever the developer's shell exports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"

_JUDGE_VARS = (
    "RAGPROOF_JUDGE_MODEL",
    "RAGPROOF_JUDGE_API_BASE",
    "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK",
    "RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK",
    "RAGPROOF_MAX_COST_USD",
    "RAGPROOF_JUDGE_MODE",
    "RAGPROOF_JUDGE_RPM",
)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory, monkeypatch):
    for name in _JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    # LiteLLM must never fetch its price map from the network, in any test.
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("RAGPROOF_STORE", str(tmp_path_factory.mktemp("store")))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path_factory.mktemp("dagster_home")))


@pytest.fixture
def store_path() -> Path:
    return Path(os.environ["RAGPROOF_STORE"])


@pytest.fixture(scope="session")
def s3_server():
    """One moto S3 server on loopback per test session (per xdist worker)."""
    from tests.support.s3_server import MotoServer

    server = MotoServer().start()
    yield server
    server.stop()


@pytest.fixture
def s3_store(s3_server, monkeypatch) -> str:
    """A fresh bucket; RAGPROOF_STORE and the AWS variables point at it. Returns the URL."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    url = f"s3://{s3_server.new_bucket()}/store"
    monkeypatch.setenv("RAGPROOF_STORE", url)
    return url


@pytest.fixture(params=["local", "s3"])
def any_store(request, monkeypatch):
    """The test's store, once on local disk and once in a fresh S3 bucket (moto)."""
    from tests.support.stores import StoreUnderTest

    if request.param == "local":
        return StoreUnderTest("local", os.environ["RAGPROOF_STORE"])
    return StoreUnderTest("s3", request.getfixturevalue("s3_store"))
