"""A shard attempt's judge spend on record while it runs, and counted if it dies."""

from __future__ import annotations

import threading

from ragproof_core.judge.ledger import JudgeLedger
from ragproof_core.run.shard_attempt import (
    AttemptRecorder,
    attempt_document,
    attempt_document_name,
    unfinished_attempts,
)
from ragproof_core.run.shards import ShardReport, merge_reports


def _ledger(requests: int, cost: float) -> JudgeLedger:
    return JudgeLedger(model="openai/judge", requests=requests, cost_usd=cost)


def _report(shard: int, attempt: str, ledger: JudgeLedger) -> ShardReport:
    return ShardReport(
        shard,
        cases=3,
        case_failures=0,
        status="completed",
        ledger=ledger.to_dict(),
        attempt=attempt,
    )


def test_attempt_documents_are_run_document_names() -> None:
    assert attempt_document_name(2, "ab12cd34ef56") == "attempt_0002_ab12cd34ef56"
    assert attempt_document_name(2, "ab12cd34ef56").isidentifier()


def test_attempts_that_never_reported_are_added_to_the_run_totals() -> None:
    documents = [
        attempt_document(0, "a0", _ledger(4, 0.004)),  # reported below
        attempt_document(1, "dead", _ledger(2, 0.002)),  # died: no report names it
        attempt_document(1, "b1", _ledger(2, 0.002)),  # its re-execution, reported
    ]
    reports = [_report(0, "a0", _ledger(4, 0.004)), _report(1, "b1", _ledger(2, 0.002))]
    unfinished = unfinished_attempts(documents, {(r.shard, r.attempt) for r in reports})
    assert [ledger.requests for ledger in unfinished] == [2]
    totals = merge_reports(reports, unfinished)
    assert (totals.cases, totals.ledger.requests) == (6, 8)
    assert round(totals.ledger.cost_usd, 6) == 0.008
    assert merge_reports(reports).ledger.requests == 6  # without them: less than was paid


def test_the_recorder_writes_at_start_on_change_and_at_the_end() -> None:
    written: list[dict] = []
    count = {"requests": 0}
    changed = threading.Event()

    def write(doc: dict) -> None:
        written.append(doc)
        if doc["requests"] == 1:
            changed.set()

    with AttemptRecorder(write, lambda: dict(count), interval_s=0.01):
        assert written == [{"requests": 0}]  # on record from the start
        count["requests"] = 1
        assert changed.wait(timeout=30)  # the thread saw the change
    count["requests"] = 2
    assert written[-1] == {"requests": 1}  # stopped: no writes after the end
    assert written.count({"requests": 0}) == 1  # unchanged snapshots are not rewritten


def test_a_store_error_does_not_stop_the_recorder() -> None:
    calls = {"n": 0}
    recovered = threading.Event()

    def write(doc: dict) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("store unreachable")
        if calls["n"] >= 3:
            recovered.set()

    state = {"tick": 0}

    def snapshot() -> dict:
        state["tick"] += 1
        return {"tick": state["tick"]}

    with AttemptRecorder(write, snapshot, interval_s=0.01):
        assert recovered.wait(timeout=30)
