"""``ragproof.resume`` continues a stopped run in place from Python, as ``ragproof run
--resume`` does (CONTRACT sections 26 and 29): only what the run is missing is asked,
and the finished run's numbers equal a run never stopped.

The run is stopped by its budget (tests/python/test_aborts.py's pricing: every judge
request's estimate is over $0.5), then resumed without one. The pipeline is
tests/support/fault_adapters.py's ``PlainAdapter``, given as an object."""

from __future__ import annotations

import pytest

import ragproof
from tests.faults.conftest import judge_env, plain_run_files
from tests.support.fault_adapters import CitingAdapter, PlainAdapter
from tests.support.judge_server import JudgeServer

CASES = 3
JUDGED = ("generation.answer_relevance", "robustness.overrefusal")
PRICED = {
    "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "1000",
    "RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK": "1000",
}


@pytest.fixture
def judge(monkeypatch):
    with JudgeServer() as server:
        for name, value in judge_env(server.url, **PRICED).items():
            monkeypatch.setenv(name, value)
        yield server


def test_resume_finishes_a_stopped_run_as_if_never_stopped(
    judge, tmp_path, store_path, monkeypatch
) -> None:
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=1)
    monkeypatch.setenv("RAGPROOF_MAX_COST_USD", "0.5")
    stopped = ragproof.evaluate(dataset, PlainAdapter(), config=config, store=store_path)
    assert stopped.status == "aborted:budget" and judge.request_count == 0
    answered = len(stopped.outputs)

    # Another pipeline's object is not the run's: refused before any call.
    with pytest.raises(ragproof.BadInput, match="the object given is a .*CitingAdapter"):
        ragproof.resume(stopped.run_id, CitingAdapter(), store=store_path)

    monkeypatch.delenv("RAGPROOF_MAX_COST_USD")
    resumed = ragproof.resume(stopped.run_id, PlainAdapter(), store=store_path)
    assert resumed.run_id == stopped.run_id
    assert resumed.status == "completed"
    # One output a case: those judged as they were are not read twice.
    assert sorted(resumed.outputs["case_id"]) == sorted(set(resumed.outputs["case_id"]))
    assert len(resumed.outputs) == CASES
    # Every judge question of every case, each asked once: none before the resume.
    assert judge.request_count == CASES * len(JUDGED)
    judged = resumed.cases[resumed.cases["metric"].isin(JUDGED)]
    assert set(judged["status"]) == {"scored"}
    assert answered <= CASES

    whole = ragproof.evaluate(dataset, PlainAdapter(), config=config, store=store_path)
    assert whole.status == "completed"
    assert resumed.metrics() == whole.metrics()
    assert ragproof.load_run(stopped.run_id, store=store_path).status == "completed"


def test_resume_of_a_completed_run_is_refused_in_one_line(
    judge, tmp_path, store_path, monkeypatch
) -> None:
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=1)
    done = ragproof.evaluate(dataset, PlainAdapter(), config=config, store=store_path)
    assert done.status == "completed"
    with pytest.raises(ragproof.BadInput) as refused:
        ragproof.resume(done.run_id, PlainAdapter(), store=store_path)
    message = str(refused.value)
    assert message == (
        f"ragproof: run --resume {done.run_id}: the run is completed; only an "
        "interrupted or aborted run can be resumed"
    )
    with pytest.raises(ragproof.BadInput, match="no such run in the store"):
        ragproof.resume("no-such-run", store=store_path)
