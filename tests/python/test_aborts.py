"""A run from Python that the budget or the judge stops is returned, not raised
(CONTRACT section 26): a ``Run`` with status ``aborted:budget`` or ``aborted:judge``,
stored and read back like any other, what it scored kept.

The pipeline is tests/support/fault_adapters.py's ``PlainAdapter`` on three questions,
each asking the local judge two questions (tests/faults/conftest.py's
``plain_run_files``), one request at a time."""

from __future__ import annotations

import pytest

import ragproof
from ragproof_core.run.evaluate import BUDGET_REASON
from tests.faults.conftest import judge_env, plain_run_files
from tests.support.judge_server import JudgeServer, Reply

CASES = 3
JUDGED = ("generation.answer_relevance", "robustness.overrefusal")


@pytest.fixture
def judge(monkeypatch):
    """The local judge, its settings in this process's environment (the run reads them
    here, as ``ragproof run`` reads its own)."""
    with JudgeServer() as server:
        server.env = lambda **extra: [
            monkeypatch.setenv(name, value)
            for name, value in judge_env(server.url, **extra).items()
        ]
        yield server


def _evaluate(tmp_path, store_path) -> ragproof.Run:
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=1)
    run = ragproof.evaluate(dataset, config=config, store=store_path)
    assert ragproof.load_run(run.run_id, store=store_path).status == run.status
    # What was answered before the stop is kept (a stopped run starts no new case).
    assert 0 < len(run.outputs) <= CASES
    assert set(run.cases["case_id"]) == set(run.outputs["case_id"])
    return run


def test_a_budget_abort_returns_the_run_aborted_budget(judge, tmp_path, store_path):
    # Each request is priced at $1000 per million tokens each way: the first one's
    # estimate (about $0.64, tests/faults/test_budget_abort.py) is over the budget.
    judge.env(
        RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="1000",
        RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK="1000",
        RAGPROOF_MAX_COST_USD="0.5",
    )
    run = _evaluate(tmp_path, store_path)
    assert run.status == "aborted:budget"
    assert judge.request_count == 0 and run.judge["requests"] == 0
    judged = run.cases[run.cases["metric"].isin(JUDGED)]
    assert len(judged) == len(run.outputs) * len(JUDGED)
    assert set(judged["status"]) == {"skipped"}
    assert set(judged["reason"]) == {BUDGET_REASON}


def test_a_judge_abort_returns_the_run_aborted_judge(judge, tmp_path, store_path):
    judge.fallback = Reply.error(401)
    judge.env()
    run = _evaluate(tmp_path, store_path)
    assert run.status == "aborted:judge"
    # The breaker opens after five answered requests, all refused.
    assert judge.request_count == 5
    assert (run.judge["requests"], run.judge["judge_errors"]) == (5, 5)
