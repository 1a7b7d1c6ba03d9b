from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragproof_core.judge.types import BudgetExceeded
from ragproof_core.metrics.generation import (
    JUDGE_METRICS,
    answer_relevance,
    citation_support,
    completeness,
    groundedness,
)
from ragproof_core.model import Answer, Case, CaseOutput, Chunk, MetricResult, Status
from tests.core.judge.conftest import closed_port, make_judge, run
from tests.support.judge_server import JudgeServer, Reply

# LiteLLM builds some pydantic schemas lazily on its first call; their warnings are not ours.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")


CONTEXT = (Chunk("c1", "Paris is the capital of France."), Chunk("c2", "The Seine flows."))
CASE = Case("q1", "Tell me about Paris.", expected_answer="Paris is the capital of France.")
ANSWER = "Paris is the capital. Paris has UNSUPPORTED towers. The Seine flows through it."


def output(
    text: str | None = ANSWER,
    chunks: tuple[Chunk, ...] | None = CONTEXT,
    citations: tuple[str, ...] | None = ("c1",),
    retrieved: tuple[Chunk, ...] | None = None,
) -> CaseOutput:
    answer = None if text is None else Answer(text, chunks, citations)
    return CaseOutput("q1", answer, retrieved)


def test_the_four_metrics_are_exported_by_name() -> None:
    assert [name for name, _ in JUDGE_METRICS] == [
        "generation.groundedness",
        "generation.citation_support",
        "generation.answer_relevance",
        "generation.completeness",
    ]


def test_groundedness_is_supported_over_total_claims(server: JudgeServer) -> None:
    result = run(groundedness(CASE, output(), make_judge(server.url)))
    assert (result.status, result.value) == (Status.SCORED, 2 / 3)
    assert result.value == 0.6666666666666666
    # Per-claim verdicts verbatim: exactly the judge's reply.
    assert json.loads(result.judge_raw_json) == {
        "claims": [
            {"claim": "Paris is the capital.", "supported": True},
            {"claim": "Paris has UNSUPPORTED towers.", "supported": False},
            {"claim": "The Seine flows through it.", "supported": True},
        ]
    }


def test_groundedness_uses_the_retrieve_result_when_the_answer_has_no_chunks(
    server: JudgeServer,
) -> None:
    out = output(chunks=None, retrieved=(Chunk("r1", "retrieved text"),))
    result = run(groundedness(CASE, out, make_judge(server.url)))
    assert result.status is Status.SCORED
    (block,) = [b for b in server.requests[0].blocks() if "id" in b]
    assert (block["id"], block["text"]) == ("r1", "retrieved text")


def test_groundedness_with_an_empty_context_is_judged_not_skipped(server: JudgeServer) -> None:
    server.script('{"claims": [{"claim": "Paris is the capital.", "supported": false}]}')
    result = run(groundedness(CASE, output(chunks=()), make_judge(server.url)))
    assert (result.status, result.value) == (Status.SCORED, 0.0)
    assert "(no chunks)" in server.requests[0].body["messages"][1]["content"]


def test_groundedness_with_zero_claims_is_not_applicable(server: JudgeServer) -> None:
    server.script('{"claims": []}')
    result = run(groundedness(CASE, output("I don't know."), make_judge(server.url)))
    assert (result.status, result.value, result.reason) == (
        Status.NOT_APPLICABLE,
        None,
        "answer makes no factual claims",
    )
    assert result.judge_raw_json == '{"claims": []}'


def test_citation_support_counts_ids_missing_from_the_context_as_unsupported(
    server: JudgeServer,
) -> None:
    out = output(citations=("c1", "c2", "c1", "c9"))
    result = run(citation_support(CASE, out, make_judge(server.url)))
    assert (result.status, result.value) == (Status.SCORED, 2 / 3)
    shown = [b["id"] for b in server.requests[0].blocks() if "id" in b]
    assert shown == ["c1", "c2"]  # c9 cannot be shown; duplicates collapsed


def test_citation_support_counts_a_missing_verdict_as_unsupported(server: JudgeServer) -> None:
    server.script('{"verdicts": [{"chunk_id": "c1", "supported": true}]}')
    out = output(citations=("c1", "c2"))
    result = run(citation_support(CASE, out, make_judge(server.url)))
    assert (result.status, result.value) == (Status.SCORED, 0.5)


def test_citation_support_with_contradictory_verdicts_is_unsupported(server: JudgeServer) -> None:
    server.script(
        '{"verdicts": [{"chunk_id": "c1", "supported": true},'
        ' {"chunk_id": "c1", "supported": false}, {"chunk_id": "c2", "supported": true}]}'
    )
    result = run(citation_support(CASE, output(citations=("c1", "c2")), make_judge(server.url)))
    assert result.value == 0.5


def test_citation_support_with_no_cited_id_in_context_scores_zero_without_a_call(
    server: JudgeServer,
) -> None:
    result = run(citation_support(CASE, output(citations=("x", "y")), make_judge(server.url)))
    assert (result.status, result.value) == (Status.SCORED, 0.0)
    assert server.request_count == 0


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"verdict": "relevant"}', 1.0),
        ('{"verdict": "partial"}', 0.5),
        ('{"verdict": "irrelevant"}', 0.0),
    ],
)
def test_answer_relevance_bands(server: JudgeServer, reply: str, value: float) -> None:
    server.script(reply)
    result = run(answer_relevance(CASE, output(), make_judge(server.url)))
    assert (result.status, result.value, result.judge_raw_json) == (Status.SCORED, value, reply)


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"verdict": "complete"}', 1.0),
        ('{"verdict": "partial"}', 0.5),
        ('{"verdict": "missing"}', 0.0),
    ],
)
def test_completeness_bands(server: JudgeServer, reply: str, value: float) -> None:
    server.script(reply)
    result = run(completeness(CASE, output(), make_judge(server.url)))
    assert (result.status, result.value) == (Status.SCORED, value)
    block = {b["name"]: b["text"] for b in server.requests[0].blocks()}
    assert block["expected_answer"] == CASE.expected_answer


NO_JUDGE = "no judge configured (set RAGPROOF_JUDGE_MODEL)"
NO_CONTEXT = (
    "no context: the answer has no retrieved_chunks and the adapter does not expose retrieval"
)


@pytest.mark.parametrize(("name", "metric"), JUDGE_METRICS)
def test_without_a_judge_every_metric_skips(name: str, metric) -> None:
    result = run(metric(CASE, output(), None))
    assert result == MetricResult("q1", name, Status.SKIPPED, None, NO_JUDGE)


@pytest.mark.parametrize(("name", "metric"), JUDGE_METRICS)
def test_without_an_answer_every_metric_skips(server: JudgeServer, name: str, metric) -> None:
    result = run(metric(CASE, output(text=None), make_judge(server.url)))
    assert result == MetricResult("q1", name, Status.SKIPPED, None, "adapter produced no answer")
    assert server.request_count == 0


@pytest.mark.parametrize("metric", [groundedness, citation_support])
def test_context_metrics_skip_without_context(server: JudgeServer, metric) -> None:
    result = run(metric(CASE, output(chunks=None, retrieved=None), make_judge(server.url)))
    assert (result.status, result.reason) == (Status.SKIPPED, NO_CONTEXT)
    assert server.request_count == 0


@pytest.mark.parametrize("citations", [None, ()])
def test_citation_support_skips_without_citations(server: JudgeServer, citations) -> None:
    result = run(citation_support(CASE, output(citations=citations), make_judge(server.url)))
    assert (result.status, result.reason) == (Status.SKIPPED, "answer has no citations")


@pytest.mark.parametrize("expected", [None, "  "])
def test_completeness_skips_without_an_expected_answer(server: JudgeServer, expected) -> None:
    case = Case("q1", "Tell me about Paris.", expected_answer=expected)
    result = run(completeness(case, output(), make_judge(server.url)))
    assert (result.status, result.reason) == (Status.SKIPPED, "case has no expected_answer")
    assert server.request_count == 0


def test_malformed_twice_is_judge_error_with_the_raw_reply(server: JudgeServer) -> None:
    server.script("Relevant!", '{"verdict": "yes"}')
    result = run(answer_relevance(CASE, output(), make_judge(server.url)))
    assert (result.status, result.value) == (Status.JUDGE_ERROR, None)
    assert result.reason.startswith("reply failed validation twice: verdict must be one of")
    assert json.loads(result.judge_raw_json) == {
        "error": result.reason,
        "raw": '{"verdict": "yes"}',
    }
    assert server.request_count == 2


def test_malformed_then_valid_scores(server: JudgeServer) -> None:
    server.script('{"claims": [{"claim": "Paris is the capital.", "supported": "yes"}]}')
    result = run(groundedness(CASE, output(), make_judge(server.url)))
    assert (result.status, result.value) == (Status.SCORED, 2 / 3)
    assert server.request_count == 2


def test_a_429_burst_then_success_scores(server: JudgeServer) -> None:
    server.script(429, 429, 429)
    result = run(completeness(CASE, output(), make_judge(server.url, max_attempts=4)))
    assert (result.status, result.value) == (Status.SCORED, 1.0)
    assert server.request_count == 4


def test_persistent_500_is_judge_error(server: JudgeServer) -> None:
    server.script(500, 500, 500)
    result = run(answer_relevance(CASE, output(), make_judge(server.url, max_attempts=3)))
    assert result.status is Status.JUDGE_ERROR
    assert result.reason.startswith("judge transport failed: InternalServerError (HTTP 500)")
    assert json.loads(result.judge_raw_json) == {"error": result.reason, "raw": None}
    assert server.request_count == 3


def test_refused_connection_is_judge_error(server: JudgeServer) -> None:
    judge = make_judge(f"http://127.0.0.1:{closed_port()}/v1", max_attempts=2)
    result = run(groundedness(CASE, output(), judge))
    assert result.status is Status.JUDGE_ERROR
    assert result.reason.startswith("judge transport failed: ")


def test_a_hang_past_the_client_timeout_is_judge_error(server: JudgeServer) -> None:
    server.script(Reply.hang(30.0), Reply.hang(30.0))
    judge = make_judge(server.url, timeout_s=2.0, max_attempts=2)
    result = run(answer_relevance(CASE, output(), judge))
    assert result.status is Status.JUDGE_ERROR
    assert result.reason.startswith("judge transport failed: Timeout (HTTP 408)")
    assert server.request_count == 2


def test_budget_exceeded_propagates_out_of_the_metric(server: JudgeServer) -> None:
    judge = make_judge(server.url, input_cost=1.0, max_cost=1e-9)
    with pytest.raises(BudgetExceeded):
        run(groundedness(CASE, output(), judge))
    assert server.request_count == 0


def test_an_unchanged_rerun_is_served_from_the_cache(server: JudgeServer, tmp_path: Path) -> None:
    cases = [
        (CASE, output()),
        (Case("q2", "Which river?", expected_answer="The Seine."), output("The Seine.")),
    ]

    async def score(judge) -> list[MetricResult]:
        return [await fn(case, out, judge) for case, out in cases for _, fn in JUDGE_METRICS]

    first = run(score(make_judge(server.url, tmp_path / "cache.sqlite")))
    assert server.request_count == 8
    server.reset()
    second = run(score(make_judge(server.url, tmp_path / "cache.sqlite")))
    assert second == first
    assert server.request_count == 0
    third = run(score(make_judge(server.url, tmp_path / "cache.sqlite", use_cache=False)))
    assert third == first
    assert server.request_count == 8
