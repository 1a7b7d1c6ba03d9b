"""Judge faults in real materializations with the judge configured, through real
LiteLLM against a local server: garbage replies, 429 bursts, persistent 500s and
refused connections, and a judge hanging past its timeout (RAGPROOF_JUDGE_TIMEOUT_S).

The dataset has two cases, each asking the judge six questions (groundedness,
citation_support, answer_relevance, completeness, through the refusal prompt
overrefusal, and context relevance, whose one reply also scores judged nDCG):
twelve judge questions per run."""

from __future__ import annotations

import json
import math

import pytest

from ragproof_core.metrics.registry import METRIC_NAMES
from tests.faults.conftest import (
    FAULTS,
    JUDGE_METRICS,
    JUDGE_MODEL,
    cache_keys,
    closed_port,
    materialize,
    query,
    summaries,
)
from tests.support.judge_server import Reply, default_content
from tests.support.litellm_warmup import warm_litellm

# LiteLLM builds some pydantic schemas lazily on its first call; their warnings are not ours.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

DATASET = FAULTS / "judged.jsonl"
CONFIG = FAULTS / "judged.toml"
CASES = ("j1", "j2")
# The metrics that ask the judge for these qa cases; abstention skips qa cases.
ASKING = (*JUDGE_METRICS, "robustness.overrefusal", "retrieval.context_relevance")
QUESTIONS = len(CASES) * len(ASKING)
# Metrics scored from the judge's replies: judged nDCG shares context relevance's call.
JUDGED = (*ASKING, "retrieval.judged_ndcg_at_k")
GARBAGE = "Sure! The claims look fine to me."

NDCG_J2 = 1 / math.log2(3)


def _stats(mean, p50, p95, scored=2, skipped=0, errored=0, judge_errors=0):
    return {
        "mean": mean,
        "p50": p50,
        "p95": p95,
        "scored": scored,
        "skipped": skipped,
        "errored": errored,
        "not_applicable": 0,
        "judge_errors": judge_errors,
    }


# j1 finds its source at rank 1, j2 at rank 2 (k = 2); both cite d1, which they retrieved;
# neither answer equals its expected answer.
DETERMINISTIC = {
    "retrieval.precision_at_k": _stats(0.5, 0.5, 0.5),
    "retrieval.recall_at_k": _stats(1.0, 1.0, 1.0),
    "retrieval.mrr": _stats(0.75, 0.5, 1.0),
    "retrieval.ndcg_at_k": _stats((1 + NDCG_J2) / 2, NDCG_J2, 1.0),
    "generation.citation_validity": _stats(1.0, 1.0, 1.0),
    "echo.exact_match": _stats(0.0, 0.0, 0.0),
    "robustness.injection_resistance": _stats(None, None, None, scored=0, skipped=2),
    "robustness.abstention": _stats(None, None, None, scored=0, skipped=2),
}
ALL_JUDGE_ERRORS = {name: _stats(None, None, None, 0, errored=2, judge_errors=2) for name in JUDGED}


def _assert_summaries(got: dict[str, dict], expected: dict[str, dict]) -> None:
    for metric, want in expected.items():
        stats = got[metric]
        for key, value in want.items():
            if key in ("mean", "p50", "p95") and value is not None:
                assert stats[key] == pytest.approx(value, rel=1e-12, abs=0), (metric, key)
            else:
                assert stats[key] == value, (metric, key)


def _run(instance, store_path, run_id: str):
    result = materialize(instance, run_id, dataset=str(DATASET), config_file=str(CONFIG))
    assert result.success
    (run,) = query(
        store_path,
        "select status, judge_model, cases, case_failures, judge_requests, cache_hits, cost_usd "
        "from runs where run_id = ?",
        [run_id],
    )
    rows = query(
        store_path,
        "select case_id, metric, status, value, reason, judge_raw_json from case_results "
        "where run_id = ?",
        [run_id],
    )
    assert len(rows) == len(CASES) * len(METRIC_NAMES)
    return run, rows


def _raw_reply(judge_raw_json: str) -> str | None:
    """The judge's last reply text kept in a judge_error row (``{"error", "raw"}``)."""
    return json.loads(judge_raw_json)["raw"]


def _judge_rows(rows):
    return [r for r in rows if r[1] in JUDGED]


def test_garbage_replies_are_judge_errors_keeping_the_raw_reply(
    instance, store_path, judge_server, use_judge
):
    judge_server.responder = lambda request: GARBAGE
    use_judge(judge_server.url)

    run, rows = _run(instance, store_path, "garbage")

    # One call plus exactly one repair retry per question, then judge_error.
    assert judge_server.request_count == 2 * QUESTIONS
    repairs = [r for r in judge_server.requests if len(r.body["messages"]) == 4]
    assert len(repairs) == QUESTIONS
    assert all(r.body["messages"][2] == {"role": "assistant", "content": GARBAGE} for r in repairs)
    assert run == ("completed", JUDGE_MODEL, 2, 0, 2 * QUESTIONS, 0, 0.0)

    judged = _judge_rows(rows)
    assert len(judged) == len(CASES) * len(JUDGED)
    for case_id, metric, status, value, reason, raw_json in judged:
        assert (status, value) == ("judge_error", None), (case_id, metric)
        assert reason.startswith("reply failed validation twice: the reply is not valid JSON")
        if metric in JUDGE_METRICS or metric.startswith("retrieval."):
            assert json.loads(raw_json) == {"error": reason, "raw": GARBAGE}
        assert _raw_reply(raw_json) == GARBAGE

    _assert_summaries(summaries(store_path, "garbage"), DETERMINISTIC | ALL_JUDGE_ERRORS)
    # Nothing invalid is cached: a re-run asks again instead of replaying garbage.
    assert cache_keys(store_path) == []


def test_429_bursts_are_retried_and_every_question_is_scored(
    instance, store_path, judge_server, use_judge, quick_retries
):
    judge_server.script(Reply.error(429, retry_after=0), 429, 429)
    use_judge(judge_server.url)

    run, rows = _run(instance, store_path, "rate-limited")

    # Each 429 is retried by the transport: three extra HTTP requests, no extra judge calls.
    assert judge_server.request_count == QUESTIONS + 3
    assert run == ("completed", JUDGE_MODEL, 2, 0, QUESTIONS, 0, 0.0)
    judged = [r for r in _judge_rows(rows) if r[1] in (*JUDGE_METRICS, "robustness.overrefusal")]
    assert sorted((r[1], r[2], r[3]) for r in judged) == sorted(
        (metric, "scored", 0.0 if metric == "robustness.overrefusal" else 1.0)
        for metric in (*JUDGE_METRICS, "robustness.overrefusal")
        for _ in CASES
    )
    scored_judge = {name: _stats(1.0, 1.0, 1.0) for name in JUDGE_METRICS}
    scored_judge["robustness.overrefusal"] = _stats(0.0, 0.0, 0.0)
    # The server grades chunks by words shared with the question (2+ relevant, 1 partial):
    # j1 d1 relevant, d2 partial; j2 d1 partial, d2 relevant. Both 0.75; judged nDCG
    # j1 1.0 (already ideal), j2 (0.5 + 1/log2 3) / (1 + 0.5/log2 3).
    ndcg_j2 = (0.5 + 1 / math.log2(3)) / (1 + 0.5 / math.log2(3))
    scored_judge["retrieval.context_relevance"] = _stats(0.75, 0.75, 0.75)
    scored_judge["retrieval.judged_ndcg_at_k"] = _stats((1 + ndcg_j2) / 2, ndcg_j2, 1.0)
    _assert_summaries(summaries(store_path, "rate-limited"), DETERMINISTIC | scored_judge)


def test_persistent_500_is_a_judge_error_not_a_crash(
    instance, store_path, judge_server, use_judge, quick_retries
):
    judge_server.script(*[500] * (10 * QUESTIONS))
    use_judge(judge_server.url)

    run, rows = _run(instance, store_path, "server-error")

    # Four transport attempts per question (the client's default), then judge_error.
    assert judge_server.request_count == 4 * QUESTIONS
    assert run == ("completed", JUDGE_MODEL, 2, 0, QUESTIONS, 0, 0.0)
    for _case, _metric, status, value, reason, _raw in _judge_rows(rows):
        assert (status, value) == ("judge_error", None)
        assert reason.startswith("judge transport failed: InternalServerError (HTTP 500)")
        assert reason.endswith("[gave up after 4 attempt(s)]")
    _assert_summaries(summaries(store_path, "server-error"), DETERMINISTIC | ALL_JUDGE_ERRORS)


def test_refused_connections_make_every_judge_metric_a_judge_error(
    instance, store_path, use_judge, quick_retries
):
    use_judge(f"http://127.0.0.1:{closed_port()}/v1")

    run, rows = _run(instance, store_path, "refused")

    assert run == ("completed", JUDGE_MODEL, 2, 0, QUESTIONS, 0, 0.0)
    for _case, _metric, status, _value, reason, raw in _judge_rows(rows):
        assert status == "judge_error"
        # LiteLLM reports a refused connection as its InternalServerError ("HTTP 500").
        assert reason.startswith("judge transport failed: ")
        assert "Connection error" in reason
        assert reason.endswith("[gave up after 4 attempt(s)]")
        assert _raw_reply(raw) is None  # no reply ever arrived
    _assert_summaries(summaries(store_path, "refused"), DETERMINISTIC | ALL_JUDGE_ERRORS)


def test_a_judge_hanging_past_the_client_timeout_is_a_judge_error(
    instance, store_path, judge_server, use_judge
):
    use_judge(
        judge_server.url,
        RAGPROOF_JUDGE_TIMEOUT_S="2",
        RAGPROOF_JUDGE_MAX_ATTEMPTS="2",
        RAGPROOF_JUDGE_BACKOFF_S="0.001",
    )
    # The 2 s deadline then times the requests alone, which a loaded machine sends
    # well within it: every attempt reaches the server, which holds each for 30 s.
    warm_litellm(judge_server)
    judge_server.script(*[Reply.hang(30.0)] * (2 * QUESTIONS))
    run, rows = _run(instance, store_path, "hang")

    assert run == ("completed", JUDGE_MODEL, 2, 0, QUESTIONS, 0, 0.0)
    assert judge_server.request_count == 2 * QUESTIONS
    for _case, _metric, status, _value, reason, _raw in _judge_rows(rows):
        assert status == "judge_error"
        assert reason.startswith("judge transport failed: Timeout")
        assert reason.endswith("[gave up after 2 attempt(s)]")
    _assert_summaries(summaries(store_path, "hang"), DETERMINISTIC | ALL_JUDGE_ERRORS)


def test_judge_raw_json_is_valid_json_on_every_row(instance, store_path, judge_server, use_judge):
    # For the refusal prompt: j1 gets a fenced reply, which the validator accepts
    # (schemas.py) and which is scored; j2 gets garbage twice, a judge_error.
    # The generation metrics get garbage too: they wrap it as {"error", "raw"}.
    def responder(request):
        texts = {b["name"]: b["text"] for b in request.blocks()}
        if request.prompt == "refusal" and "France" in texts["question"]:
            return '```json\n{"refused": false}\n```'
        return GARBAGE

    judge_server.responder = responder
    use_judge(judge_server.url)
    _run(instance, store_path, "raw-json")

    rows = query(
        store_path,
        "select case_id, metric, judge_raw_json from case_results where judge_raw_json is not null",
    )
    # Every metric scored from a judge reply kept it (judged nDCG shares context
    # relevance's reply): the check below covers twelve rows.
    assert sorted((case_id, metric) for case_id, metric, _ in rows) == sorted(
        (case_id, metric) for case_id in CASES for metric in JUDGED
    )
    bad = []
    for case_id, metric, raw in rows:
        try:
            json.loads(raw)
        except json.JSONDecodeError:
            bad.append((case_id, metric, raw))
    assert bad == []


def _nested_claims(depth: int) -> str:
    return '{"claims": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize(
    "hostile",
    [_nested_claims(5_000), '{"claims": [], "padding": "' + "x" * 300_000 + '"}'],
    ids=["nested-5000", "300kB"],
)
def test_a_hostile_reply_is_that_metrics_judge_error_only(
    instance, store_path, judge_server, use_judge, hostile
):
    # Groundedness gets the hostile reply, to its question and to its repair; every
    # other question a valid one.
    judge_server.responder = lambda request: (
        hostile if request.prompt == "groundedness" else default_content(request)
    )
    use_judge(judge_server.url)

    run, rows = _run(instance, store_path, "hostile")

    # One repair retry for each groundedness question, nothing else asked twice.
    assert run == ("completed", JUDGE_MODEL, 2, 0, QUESTIONS + 2, 0, 0.0)
    by_metric = {(case, metric): (status, reason) for case, metric, status, _, reason, _ in rows}
    for case in CASES:
        status, reason = by_metric[(case, "generation.groundedness")]
        assert status == "judge_error"
        assert reason.startswith("reply failed validation twice: the reply is ")
        for metric in METRIC_NAMES:
            if metric != "generation.groundedness":
                assert by_metric[(case, metric)][0] != "error", (case, metric)
    got = summaries(store_path, "hostile")
    _assert_summaries(got, DETERMINISTIC)
    assert got["generation.groundedness"]["judge_errors"] == 2
    assert got["generation.answer_relevance"]["scored"] == 2


def test_a_trickling_reply_is_cut_at_the_judge_timeout(
    instance, store_path, judge_server, use_judge
):
    # Groundedness replies arrive 8 bytes every 0.5 s (a whole reply would take
    # over 15 s); LiteLLM's per-read timeout never fires, the total deadline does.
    def pick(request):
        return Reply(trickle_s=0.5) if request.prompt == "groundedness" else Reply()

    use_judge(judge_server.url, RAGPROOF_JUDGE_TIMEOUT_S="1.5", RAGPROOF_JUDGE_MAX_ATTEMPTS="1")
    warm_litellm(judge_server)  # the 1.5 s deadline times the replies, not LiteLLM's set-up
    judge_server.script(*[pick] * QUESTIONS)

    run, rows = _run(instance, store_path, "trickle")

    assert run == ("completed", JUDGE_MODEL, 2, 0, QUESTIONS, 0, 0.0)
    groundedness = [r for r in rows if r[1] == "generation.groundedness"]
    for _case, _metric, status, _value, reason, _raw in groundedness:
        assert status == "judge_error"
        assert reason == (
            "judge transport failed: Timeout (HTTP 408): "
            "no complete reply within 1.5s [gave up after 1 attempt(s)]"
        )
    assert len(judge_server.trickles) == 2
    for sent, total, seconds in judge_server.trickles:
        assert sent < total / 4
        assert seconds < 1.5 + 1.0  # the client hung up at its deadline
    got = summaries(store_path, "trickle")
    _assert_summaries(got, DETERMINISTIC)
    assert got["generation.groundedness"]["judge_errors"] == 2
    assert got["generation.completeness"]["scored"] == 2


def _summary_metadata(result) -> dict:
    (event,) = [
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key.to_user_string() == "run_summary"
    ]
    return {key: value.value for key, value in event.materialization.metadata.items()}


def test_judge_failures_are_in_the_run_summary_metadata(
    instance, store_path, judge_server, use_judge, quick_retries
):
    # Every completeness reply is prose: both cases' completeness questions fail twice.
    judge_server.fallback = lambda request: (
        Reply(content=GARBAGE) if request.prompt == "completeness" else Reply()
    )
    use_judge(judge_server.url)
    result = materialize(instance, "named", dataset=str(DATASET), config_file=str(CONFIG))
    assert result.success
    metadata = _summary_metadata(result)
    assert (metadata["status"], metadata["judge_errors"]) == ("completed", 2)
    assert metadata["judge_failures"].startswith(
        f"judge: 2 of {QUESTIONS + 2} requests failed (first: reply failed validation twice"
    )
    assert metadata["judge_response_format"] == "json_object"


def test_a_judge_refusing_every_key_ends_the_run_aborted_judge(
    instance, store_path, judge_server, use_judge
):
    judge_server.fallback = Reply.error(401)
    use_judge(judge_server.url)
    result = materialize(instance, "refused", dataset=str(DATASET), config_file=str(CONFIG))
    assert result.success  # the run ended as it should: its record says why
    assert judge_server.request_count == 5
    metadata = _summary_metadata(result)
    assert (metadata["status"], metadata["judge_errors"]) == ("aborted:judge", 5)
    assert metadata["judge_failures"].startswith(
        "judge unavailable: openai/judge-test: AuthenticationError (HTTP 401)"
    )
    (status,) = query(store_path, "select status from runs where run_id = 'refused'", [])
    assert status == ("aborted:judge",)
