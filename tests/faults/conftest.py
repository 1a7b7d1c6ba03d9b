"""Shared parts of the fault suite: a temporary Dagster instance, in-process
materialization of the `evaluate` job, read-only view queries, a local judge
server and the judge environment.

The judge transport's retry backoff and request timeout come from the
environment (RAGPROOF_JUDGE_BACKOFF_S, RAGPROOF_JUDGE_TIMEOUT_S,
RAGPROOF_JUDGE_MAX_ATTEMPTS); ``quick_retries`` sets a millisecond backoff
(attempts unchanged: 4). Everything (LiteLLM, HTTP, retries, cache, store,
views) is the production path.
"""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs
from tests.conftest import FIXTURES
from tests.support.judge_server import JudgeServer

FAULTS = FIXTURES / "faults"
JUDGE_MODEL = "openai/judge-test"
API_KEY = "sk-test-dummy"

# The four judge-backed generation metrics (the refusal metrics ask the judge too).
JUDGE_METRICS = (
    "generation.groundedness",
    "generation.citation_support",
    "generation.answer_relevance",
    "generation.completeness",
)


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as inst:
        yield inst


def materialize(instance: dg.DagsterInstance, run_id: str, **config):
    """One real materialization of every evaluation asset for partition ``run_id``."""
    instance.add_dynamic_partitions(evaluation_runs.name, [run_id])
    return defs.resolve_job_def("evaluate").execute_in_process(
        run_config=evaluate_run_config(EvalRunConfig(**config)),
        instance=instance,
        partition_key=run_id,
        raise_on_error=False,
    )


def query(store: Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of ``sql`` against the store's DuckDB views, opened read-only as a user would."""
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def summaries(store: Path, run_id: str) -> dict[str, dict]:
    """metric_summaries of one run, keyed by metric."""
    columns = (
        "mean",
        "p50",
        "p95",
        "scored",
        "skipped",
        "errored",
        "not_applicable",
        "judge_errors",
    )
    rows = query(
        store,
        f"select metric, {', '.join(columns)} from metric_summaries where run_id = ?",
        [run_id],
    )
    return {row[0]: dict(zip(columns, row[1:], strict=True)) for row in rows}


def cache_keys(store: Path) -> list[tuple[str, str, str]]:
    """Every (model, prompt hash, input hash) in the judge cache, read-only."""
    path = store / "judge_cache.sqlite"
    if not path.exists():
        return []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("select model, prompt_hash, input_hash from judge_replies").fetchall()
    except sqlite3.OperationalError:  # the table is not created yet
        return []
    finally:
        con.close()


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def closed_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def judge_env(api_base: str, **extra: str) -> dict[str, str]:
    """The judge's environment variables (CONTRACT section 3) for a server at ``api_base``."""
    return {
        "RAGPROOF_JUDGE_MODEL": JUDGE_MODEL,
        "RAGPROOF_JUDGE_API_BASE": api_base,
        "OPENAI_API_KEY": API_KEY,
        # The local judge is free, and says so: an unpriced judge's cost is unknown, not $0.
        "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "0",
        **extra,
    }


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    """A fresh local OpenAI-compatible server; ``.url`` already ends in ``/v1``."""
    with JudgeServer() as server:
        yield server


@pytest.fixture
def use_judge(monkeypatch: pytest.MonkeyPatch):
    """Configure the judge for in-process runs: ``use_judge(api_base, **extra_env)``."""

    def configure(api_base: str, **extra: str) -> None:
        for name, value in judge_env(api_base, **extra).items():
            monkeypatch.setenv(name, value)

    return configure


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Millisecond transport backoff for in-process runs (attempts unchanged: 4)."""
    monkeypatch.setenv("RAGPROOF_JUDGE_BACKOFF_S", "0.001")


def plain_run_files(folder: Path, cases: int, concurrency: int) -> tuple[Path, Path]:
    """A dataset of ``cases`` distinct qa questions and a config running ``PlainAdapter``:
    every case asks the judge exactly two questions (answer_relevance, overrefusal)."""
    dataset = write_jsonl(
        folder / "plain.jsonl",
        [{"id": f"p{i:03d}", "question": f"What is question number {i}?"} for i in range(cases)],
    )
    config = folder / "plain.toml"
    config.write_text(
        f"[run]\nconcurrency = {concurrency}\n\n[adapter]\n"
        'target = "tests.support.fault_adapters:PlainAdapter"\n',
        encoding="utf-8",
    )
    return dataset, config
