from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from ragproof_core.interruption import Interrupted, Interruption
from ragproof_core.judge.cost import RequestEstimate, estimate_tokens
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.prompts import DEFAULT_DIRECTORY, PROMPT_NAMES, load_prompts, render
from ragproof_core.judge.reply_cache import input_hash
from ragproof_core.judge.session import REPAIR_INSTRUCTION, JudgeStats
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import BudgetExceeded
from tests.core.judge.conftest import API_KEY, MODEL, closed_port, run
from tests.core.judge.conftest import make_judge as judge_on
from tests.support.judge_server import JudgeServer, Reply

# LiteLLM builds some pydantic schemas lazily on its first call; their warnings are not ours.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")


INPUTS = {"question": "Is the sky blue?", "answer": "Yes, on a clear day."}
VALID = '{"verdict": "partial"}'
# sha256 of {"answer":"Yes, on a clear day.","question":"Is the sky blue?"} (canonical JSON),
# computed outside ragproof: printf '%s' '...' | sha256sum.
INPUTS_HASH = "b4d86f57fd14389d5e79488418efb5c3a681e90c9daf2f257558dc3199735fd6"
# The answer_relevance prompt rendered with INPUTS is 1714 characters: ceil(1714 / 4) = 429
# tokens when the provider reports no usage; a reply is assumed to be 200 tokens before it comes.


def chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_a_valid_reply_is_returned_and_cached(server: JudgeServer, tmp_path: Path) -> None:
    server.script(VALID)
    judge = judge_on(server.url, tmp_path / "c.sqlite")
    verdict = run(judge.ask("answer_relevance", INPUTS))
    assert (verdict.ok, verdict.data, verdict.raw, verdict.cached, verdict.requests) == (
        True,
        {"verdict": "partial"},
        VALID,
        False,
        1,
    )
    prompt_hash = load_prompts()["answer_relevance"].sha256
    assert input_hash(INPUTS) == INPUTS_HASH
    assert judge.cache.get(MODEL, prompt_hash, INPUTS_HASH).data == {"verdict": "partial"}
    # The server reports usage (100, 20): the session counts the provider's tokens.
    assert judge.stats == JudgeStats(
        requests=1, cache_hits=0, calls_ok=1, judge_errors=0, input_tokens=100, output_tokens=20
    )


def test_malformed_then_valid_takes_exactly_two_requests(server: JudgeServer) -> None:
    server.script("The answer is partial.", VALID)
    verdict = run(judge_on(server.url).ask("answer_relevance", INPUTS))
    assert (verdict.ok, verdict.data, verdict.requests) == (True, {"verdict": "partial"}, 2)
    assert server.request_count == 2
    first, repair = (r.body["messages"] for r in server.requests)
    error = (
        "the reply is not valid JSON (Expecting value at line 1 column 1); "
        "reply with the JSON object only, no other text"
    )
    # The repair request is the first conversation plus the bad reply and the error.
    assert repair == [
        *first,
        {"role": "assistant", "content": "The answer is partial."},
        {"role": "user", "content": REPAIR_INSTRUCTION.format(error=error)},
    ]


def test_malformed_twice_is_a_failed_verdict_with_the_raw_reply(
    server: JudgeServer, tmp_path: Path
) -> None:
    server.script('{"verdict": "maybe"}', '{"verdict": "Relevant"}')
    judge = judge_on(server.url, tmp_path / "c.sqlite")
    verdict = run(judge.ask("answer_relevance", INPUTS))
    assert (verdict.ok, verdict.data, verdict.raw, verdict.requests) == (
        False,
        None,
        '{"verdict": "Relevant"}',
        2,
    )
    assert verdict.error == (
        'reply failed validation twice: verdict must be one of "relevant", "partial", '
        '"irrelevant", got string "Relevant"; '
        'required shape: {"verdict": "relevant" | "partial" | "irrelevant"}'
    )
    assert server.request_count == 2
    assert judge.cache.count() == 0  # only validated replies are cached
    assert judge.stats.judge_errors == 1


def test_a_new_judge_on_the_same_cache_makes_no_requests(
    server: JudgeServer, tmp_path: Path
) -> None:
    first = run(judge_on(server.url, tmp_path / "c.sqlite").ask("answer_relevance", INPUTS))
    server.reset()
    again = judge_on(server.url, tmp_path / "c.sqlite")
    verdict = run(again.ask("answer_relevance", INPUTS))
    assert (verdict.ok, verdict.data, verdict.raw) == (True, first.data, first.raw)
    assert (verdict.cached, verdict.cost_usd, verdict.requests) == (True, 0.0, 0)
    assert server.request_count == 0
    assert again.stats == JudgeStats(requests=0, cache_hits=1)


def test_use_cache_false_neither_reads_nor_writes(server: JudgeServer, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    run(judge_on(server.url, path).ask("answer_relevance", INPUTS))
    uncached = judge_on(server.url, path, use_cache=False)
    verdict = run(uncached.ask("answer_relevance", {**INPUTS, "answer": "No."}))
    verdict_again = run(uncached.ask("answer_relevance", INPUTS))
    assert (verdict.cached, verdict_again.cached) == (False, False)
    assert server.request_count == 3
    assert uncached.cache.count() == 1


def test_the_cache_is_keyed_by_model(server: JudgeServer, tmp_path: Path) -> None:
    run(judge_on(server.url, tmp_path / "c.sqlite").ask("answer_relevance", INPUTS))
    other = judge_on(server.url, tmp_path / "c.sqlite", model="openai/judge-other")
    verdict = run(other.ask("answer_relevance", INPUTS))
    assert verdict.cached is False
    assert server.request_count == 2
    assert server.requests[1].body["model"] == "judge-other"


def test_the_cache_is_keyed_by_prompt_hash(server: JudgeServer, tmp_path: Path) -> None:
    run(judge_on(server.url, tmp_path / "c.sqlite").ask("answer_relevance", INPUTS))
    judge = judge_on(server.url, tmp_path / "c.sqlite")
    # The shipped prompts, answer_relevance.txt with one space appended.
    edited = tmp_path / "prompts"
    shutil.copytree(DEFAULT_DIRECTORY, edited)
    with open(edited / "answer_relevance.txt", "a", encoding="utf-8") as handle:
        handle.write(" ")
    judge.prompts = load_prompts(edited)
    assert run(judge.ask("answer_relevance", INPUTS)).cached is False
    assert server.request_count == 2
    # The edited file's own sha256 (hashed here, not by ragproof): a new cache key.
    edited_hash = hashlib.sha256((edited / "answer_relevance.txt").read_bytes()).hexdigest()
    assert edited_hash != load_prompts()["answer_relevance"].sha256
    assert judge.prompt_hashes["answer_relevance"] == edited_hash
    assert judge.cache.get(MODEL, edited_hash, INPUTS_HASH).data == {"verdict": "relevant"}
    assert judge.cache.count() == 2


def test_transport_failure_is_a_failed_verdict_not_an_exception(server: JudgeServer) -> None:
    server.script(500, 500)
    verdict = run(judge_on(server.url, max_attempts=2).ask("answer_relevance", INPUTS))
    assert (verdict.ok, verdict.raw, verdict.requests) == (False, None, 1)
    assert verdict.error.startswith("judge transport failed: InternalServerError (HTTP 500)")
    assert verdict.error.endswith("[gave up after 2 attempt(s)]")


def test_refused_connection_is_a_failed_verdict() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    verdict = run(judge_on(url, max_attempts=2).ask("answer_relevance", INPUTS))
    assert verdict.ok is False
    assert verdict.error.startswith("judge transport failed: ")


def test_cost_uses_provider_usage_when_reported(server: JudgeServer) -> None:
    server.usage = (100, 20)
    judge = judge_on(server.url, input_cost=2.0, output_cost=10.0)
    verdict = run(judge.ask("answer_relevance", INPUTS))
    assert verdict.cost_usd == 0.0004  # (100 * 2 + 20 * 10) / 1e6
    assert judge.budget.spent == 0.0004
    assert judge.stats.cost_usd == 0.0004


def test_cost_falls_back_to_four_characters_per_token(server: JudgeServer) -> None:
    server.usage = None
    server.script(VALID)
    judge = judge_on(server.url, input_cost=2.0, output_cost=10.0)
    verdict = run(judge.ask("answer_relevance", INPUTS))
    assert chars(render(load_prompts()["answer_relevance"], INPUTS)) == 1714
    assert estimate_tokens(VALID) == 6  # 22 characters
    assert verdict.cost_usd == 0.000918  # (429 * 2 + 6 * 10) / 1e6


def test_a_repaired_verdict_costs_both_calls(server: JudgeServer) -> None:
    server.script(Reply("not json", usage=(300, 7)), Reply(VALID, usage=(400, 9)))
    verdict = run(
        judge_on(server.url, input_cost=1.0, output_cost=1.0).ask("answer_relevance", INPUTS)
    )
    assert verdict.cost_usd == pytest.approx(0.000716, abs=1e-15)  # (300 + 7 + 400 + 9) / 1e6


def test_the_budget_stops_the_call_that_would_breach_it(server: JudgeServer) -> None:
    server.usage = (1000, 100)
    prices = {"input_cost": 3.0, "output_cost": 15.0}
    estimate = 0.004287  # (429 * 3 + 200 * 15) / 1e6, before the call
    actual = 0.0045  # (1000 * 3 + 100 * 15) / 1e6, as the server reports usage (1000, 100)
    # The first call fits; after paying for it the next estimate does not.
    judge = judge_on(server.url, max_cost=estimate + actual / 2, **prices)
    assert run(judge.ask("answer_relevance", INPUTS)).ok
    with pytest.raises(BudgetExceeded, match="judge budget"):
        run(judge.ask("answer_relevance", INPUTS))
    assert server.request_count == 1
    assert judge.budget.spent == actual
    assert judge.budget.reserved == 0.0


def test_the_budget_guards_the_repair_retry_too(server: JudgeServer) -> None:
    server.usage = (1000, 100)
    estimate = 0.004287  # (429 * 3 + 200 * 15) / 1e6
    server.script("not json")
    judge = judge_on(server.url, max_cost=estimate * 1.01, input_cost=3.0, output_cost=15.0)
    with pytest.raises(BudgetExceeded):
        run(judge.ask("answer_relevance", INPUTS))
    assert server.request_count == 1


def test_cache_hits_are_free_under_an_exhausted_budget(server: JudgeServer, tmp_path: Path) -> None:
    run(judge_on(server.url, tmp_path / "c.sqlite").ask("answer_relevance", INPUTS))
    broke = judge_on(server.url, tmp_path / "c.sqlite", max_cost=0.0, input_cost=1.0)
    assert run(broke.ask("answer_relevance", INPUTS)).cached is True


def test_estimate_reports_cached_or_the_pre_call_estimate(
    server: JudgeServer, tmp_path: Path
) -> None:
    judge = judge_on(server.url, tmp_path / "c.sqlite", input_cost=2.0, output_cost=10.0)
    # (429 * 2 + 200 * 10) / 1e6
    assert judge.estimate("answer_relevance", INPUTS) == RequestEstimate(False, 0.002858, 429, 200)
    run(judge.ask("answer_relevance", INPUTS))
    assert judge.estimate("answer_relevance", INPUTS) == RequestEstimate(True, 0.0, 0, 0)
    assert server.request_count == 1


def test_concurrency_bounds_the_calls_in_flight(server: JudgeServer) -> None:
    server.latency_s = 0.05
    judge = judge_on(server.url, concurrency=3)
    in_flight = 0
    peak = 0
    original = judge.client.complete

    async def counting(messages, fmt=None):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await original(messages, fmt)
        finally:
            in_flight -= 1

    judge.client.complete = counting

    async def many():
        questions = [{**INPUTS, "question": f"q{i}"} for i in range(9)]
        return await asyncio.gather(*(judge.ask("answer_relevance", q) for q in questions))

    verdicts = run(many())
    assert all(v.ok for v in verdicts)
    assert peak == 3
    assert server.request_count == 9


def test_api_keys_are_never_stored_in_the_cache(server: JudgeServer, tmp_path: Path) -> None:
    judge = judge_on(server.url, tmp_path / "c.sqlite")
    server.script("bad", VALID)
    run(judge.ask("answer_relevance", INPUTS))
    judge.cache.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("c.sqlite*"))
    assert b'"partial"' in stored
    assert API_KEY.encode() not in stored


def test_make_judge_returns_none_without_a_model(tmp_path: Path) -> None:
    assert make_judge(JudgeEnv(), tmp_path / "c.sqlite") is None
    assert not (tmp_path / "c.sqlite").exists()


def test_make_judge_builds_a_judge_from_the_environment(tmp_path: Path) -> None:
    env = JudgeEnv(MODEL, "http://127.0.0.1:9/v1", 1.0, 2.0, 0.5)
    judge = make_judge(env, tmp_path / "c.sqlite", concurrency=4)
    assert (judge.model, judge.client.api_base, judge.budget.max_usd, judge.concurrency) == (
        MODEL,
        "http://127.0.0.1:9/v1",
        0.5,
        4,
    )
    # Only the evaluation prompts of per_metric mode: test-set generation prompts
    # and combined mode's prompt never enter a per_metric run's record.
    assert judge.mode == "per_metric"
    assert judge.prompt_hashes == {
        n: p.sha256 for n, p in load_prompts().items() if n in PROMPT_NAMES
    }
    assert list(judge.prompt_hashes) == sorted(judge.prompt_hashes)
    judge.close()
    combined = make_judge(replace(env, mode="combined"), None)
    assert combined.mode == "combined"
    assert combined.prompt_hashes == {"combined": load_prompts()["combined"].sha256}
    assert make_judge(env, tmp_path / "c.sqlite", use_cache=False).cache is None


def test_validated_reply_is_stored_verbatim_with_tokens(
    server: JudgeServer, tmp_path: Path
) -> None:
    server.script(Reply('{"verdict": "partial", "reason": "half"}', usage=(50, 5)))
    judge = judge_on(server.url, tmp_path / "c.sqlite", input_cost=1.0, output_cost=1.0)
    run(judge.ask("answer_relevance", INPUTS))
    prompt_hash = load_prompts()["answer_relevance"].sha256
    row = judge.cache.get(MODEL, prompt_hash, INPUTS_HASH)
    assert (json.dumps(row.data), row.input_tokens, row.output_tokens, row.cost_usd) == (
        '{"verdict": "partial", "reason": "half"}',
        50,
        5,
        5.5e-05,  # (50 * 1 + 5 * 1) / 1e6
    )


def test_a_bad_reply_then_a_transport_failure_on_its_repair(server: JudgeServer) -> None:
    server.script("not json", 500, 500)
    judge = judge_on(server.url, max_attempts=2, input_cost=1.0, output_cost=1.0)
    verdict = run(judge.ask("answer_relevance", INPUTS))
    assert (verdict.ok, verdict.raw, verdict.requests) == (False, "not json", 2)
    assert verdict.error.startswith(
        "judge transport failed: InternalServerError (HTTP 500)"
    ) and verdict.error.endswith("[gave up after 2 attempt(s)]")
    # The first reply was billed (usage 100 in, 20 out at $1/Mtok); the failed repair was not.
    assert verdict.cost_usd == 0.00012
    assert (judge.budget.spent, judge.budget.reserved) == (0.00012, 0.0)
    assert server.request_count == 3  # the bad reply, then the repair tried twice
    assert (judge.stats.requests, judge.stats.repairs, judge.stats.judge_errors) == (2, 1, 1)
    assert judge.stats.calls_ok == 0


def test_a_cancelled_call_releases_its_budget_reservation(server: JudgeServer) -> None:
    server.script(Reply.hang(30.0))
    # Room for one call's estimate, (429 * 3 + 200 * 15) / 1e6 = $0.004287, and not two.
    judge = judge_on(server.url, input_cost=3.0, output_cost=15.0, max_cost=0.006)

    async def main():
        call = asyncio.create_task(judge.ask("answer_relevance", INPUTS))
        while server.request_count == 0:
            await asyncio.sleep(0.01)
        held = judge.budget.reserved
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        released = (judge.budget.reserved, judge.budget.spent)
        # The whole budget is free again: a new call fits.
        verdict = await judge.ask("answer_relevance", INPUTS)
        return held, released, verdict

    held, released, verdict = run(main())
    assert held == 0.004287
    assert released == (0.0, 0.0)
    assert verdict.ok and server.request_count == 2


def test_after_a_signal_the_judge_sends_no_request_not_even_a_repair(server: JudgeServer) -> None:
    # The first reply needs a repair; the signal comes while it is in flight.
    signal: list[bool] = []

    def first(request) -> str:
        signal.append(True)
        return "The answer is partial."

    server.script(first, VALID)
    judge = judge_on(server.url)
    judge.interruption = Interruption(lambda: bool(signal))
    with pytest.raises(Interrupted):
        run(judge.ask("answer_relevance", INPUTS))
    assert server.request_count == 1
    with pytest.raises(Interrupted):
        run(judge.ask("answer_relevance", {**INPUTS, "question": "Is grass green?"}))
    assert server.request_count == 1
