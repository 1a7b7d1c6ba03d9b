"""A run calls only the adapter methods its metrics read (issue 51, CONTRACT section 2):
each metric declares what it reads of a case's output (``MetricSpec.reads``), and the
run works out which of ``retrieve()`` and ``answer()`` to call, counting each call.

Against a counting HTTP service (``HttpAdapter`` with ``url`` and ``retrieve_url``) and
an in-process adapter that records its calls: ten cases each.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from ragproof_core.adapters.http import HttpAdapter
from ragproof_core.adapters.runner import adapter_calls_line, planned_calls
from ragproof_core.config.settings import RunSettings
from ragproof_core.metrics.custom import run_registry
from ragproof_core.metrics.custom_tables import MetricTableError, parse_metric_tables
from ragproof_core.metrics.registry import REGISTRY
from ragproof_core.metrics.spec import ALL_READS, READS, adapter_methods
from ragproof_core.model import Case, CaseKind, Status, TurnOf
from ragproof_core.run.evaluate import Selection, evaluate
from tests.conftest import FIXTURES
from tests.support.rag_service import RagService

CASES = [Case(f"c{i}", f"question {i}", CaseKind.QA, ("doc1#0",), "echo") for i in range(10)]
RETRIEVAL = ("retrieval.precision_at_k", "retrieval.ndcg_at_k")


def _paths(service: RagService) -> Counter[str]:
    return Counter(request.path for request in service.requests)


def _run_http(metrics: tuple[str, ...], registry=REGISTRY):
    with RagService() as service:
        adapter = HttpAdapter(f"{service.base}/answer", retrieve_url=f"{service.base}/retrieve")

        async def main():
            try:
                return await evaluate(
                    CASES, adapter, RunSettings(metrics=metrics), registry=registry
                )
            finally:
                await adapter.aclose()

        evaluation = asyncio.run(main())
    return evaluation, _paths(service)


def test_retrieval_metrics_alone_call_retrieve_alone():
    evaluation, paths = _run_http(RETRIEVAL)
    assert paths == {"/retrieve": 10}
    assert evaluation.adapter_calls == {"retrieve": 10}
    assert adapter_calls_line(evaluation.adapter_calls) == "adapter: 10 retrieve, 0 answer calls"
    scored = [r for r in evaluation.results if r.status is Status.SCORED]
    assert len(scored) == 20  # the retrieval metrics scored every case, nothing failed


def test_a_metric_of_the_answer_alone_calls_answer_alone():
    evaluation, paths = _run_http(("echo.exact_match",))
    assert paths == {"/answer": 10}
    assert evaluation.adapter_calls == {"answer": 10}
    assert {r.status for r in evaluation.results} == {Status.SCORED}


def test_metrics_of_both_call_both():
    evaluation, paths = _run_http((*RETRIEVAL, "echo.exact_match"))
    assert paths == {"/retrieve": 10, "/answer": 10}
    assert evaluation.adapter_calls == {"retrieve": 10, "answer": 10}


def test_a_metric_of_your_own_declares_what_it_reads(tmp_path):
    tables = parse_metric_tables(
        [
            {
                "name": "custom.retrieved_count",
                "function": "tests.core.run.test_adapter_calls:retrieved_count",
                "reads": ["retrieved"],
            }
        ],
        tmp_path,
    )
    evaluation, paths = _run_http(("custom.retrieved_count",), run_registry(tables))
    assert paths == {"/retrieve": 10}
    assert [r.value for r in evaluation.results] == [1.0] * 10
    # Without the key it reads everything, as before: both methods.
    undeclared = parse_metric_tables(
        [{"name": "custom.n", "function": "tests.core.run.test_adapter_calls:retrieved_count"}],
        tmp_path,
    )
    assert run_registry(undeclared).spec("custom.n").reads == ALL_READS
    _, paths = _run_http(("custom.n",), run_registry(undeclared))
    assert paths == {"/retrieve": 10, "/answer": 10}


def retrieved_count(*, retrieved, **_) -> float | None:
    return None if retrieved is None else float(len(retrieved))


def test_reads_outside_the_known_names_are_bad_input(tmp_path):
    with pytest.raises(MetricTableError, match=r'metric\[1\]\.reads: "chunks" is not something'):
        parse_metric_tables(
            [{"name": "custom.x", "function": "m:f", "reads": ["chunks"]}], tmp_path
        )


class RecordingAdapter:
    """Sync methods, recording each call; ``history`` taken, so it runs conversations."""

    def __init__(self, with_retrieve: bool = True) -> None:
        self.calls: list[str] = []
        if not with_retrieve:
            self.retrieve = None  # type: ignore[assignment]

    def retrieve(self, question: str, history=None):
        self.calls.append("retrieve")
        return [{"id": "doc1#0", "text": "ragproof evaluates RAG pipelines."}]

    def answer(self, question: str, history=None):
        self.calls.append("answer")
        return {"text": "echo", "citations": ["doc1#0"]}


def _run_in_process(adapter, cases, metrics):
    return asyncio.run(evaluate(cases, adapter, RunSettings(metrics=metrics)))


def test_an_in_process_adapter_is_called_for_what_the_metrics_read():
    adapter = RecordingAdapter()
    _run_in_process(adapter, CASES, RETRIEVAL)
    assert Counter(adapter.calls) == {"retrieve": 10}
    adapter = RecordingAdapter()
    _run_in_process(adapter, CASES, ("generation.citation_validity",))
    # The context is the answer's own chunks, else retrieve()'s: both are called.
    assert Counter(adapter.calls) == {"retrieve": 10, "answer": 10}


def test_a_conversations_turns_always_call_answer():
    turns = [
        Case(f"t{n}", f"turn {n}", CaseKind.QA, ("doc1#0",), turn=TurnOf("conv", n, 3))
        for n in (1, 2, 3)
    ]
    adapter = RecordingAdapter()
    evaluation = _run_in_process(adapter, turns, RETRIEVAL)
    assert Counter(adapter.calls) == {"retrieve": 3, "answer": 3}
    assert evaluation.adapter_calls == {"retrieve": 3, "answer": 3}
    assert planned_calls(adapter, turns, frozenset({"retrieve"})) == {"retrieve": 3, "answer": 3}


def test_a_metric_needing_a_method_the_adapter_lacks_is_skipped_not_an_error():
    adapter = RecordingAdapter(with_retrieve=False)
    evaluation = _run_in_process(adapter, CASES, RETRIEVAL)
    assert adapter.calls == []  # retrieve() is what they read, and there is none
    assert {(r.status, r.reason) for r in evaluation.results} == {
        (Status.SKIPPED, "adapter does not expose retrieval")
    }
    assert adapter_calls_line(evaluation.adapter_calls) is None


def test_every_shipped_metric_declares_what_it_reads():
    for declared in REGISTRY.metrics:
        assert declared.reads < ALL_READS, declared.name
        assert set(declared.reads) <= set(READS)
    assert Selection(RETRIEVAL).adapter_methods == {"retrieve"}
    assert Selection(("echo.exact_match",)).adapter_methods == {"answer"}
    assert adapter_methods({"context"}) == {"retrieve", "answer"}


def test_the_recorded_fixture_replays_without_a_call_counted():
    from ragproof_core.adapters.recorded import RecordedAdapter
    from ragproof_core.data.dataset import load_dataset

    cases = load_dataset(FIXTURES / "recorded" / "cases.jsonl")
    adapter = RecordedAdapter(str(FIXTURES / "recorded" / "outputs.jsonl"))
    evaluation = asyncio.run(evaluate(cases, adapter, RunSettings(metrics=RETRIEVAL)))
    assert adapter_calls_line(evaluation.adapter_calls) is None
