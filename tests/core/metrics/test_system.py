"""system.latency_s, system.tokens and system.cost_usd (CONTRACT section 18): values from
what the pipeline reported, skipped with the contract's reasons where it reported nothing."""

from __future__ import annotations

import asyncio
import json

import pytest

from ragproof_core.adapters.coerce import AdapterOutputError, to_answer
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.adapters.runner import run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.metrics.registry import REGISTRY
from ragproof_core.metrics.system import COST, LATENCY, TOKENS, cost_usd, latency_s, tokens
from ragproof_core.model import Answer, Case, CaseOutput, Status, Usage
from tests.conftest import FIXTURES

SYSTEM = FIXTURES / "system"


def _output(latency=None, usage=None, text="an answer") -> CaseOutput:
    return CaseOutput("c1", Answer(text, usage=usage), latency_s=latency)


CASE = Case("c1", "q?")


@pytest.mark.parametrize(
    ("usage", "expected_tokens", "expected_cost"),
    [
        (Usage(120, 30, 0.0042), 150.0, 0.0042),
        (Usage(input_tokens=7), 7.0, None),
        (Usage(output_tokens=0), 0.0, None),
        (Usage(cost_usd=0.0), None, 0.0),
        (None, None, None),
    ],
)
def test_tokens_and_cost_are_what_usage_reports_or_skipped(usage, expected_tokens, expected_cost):
    output = _output(usage=usage)
    for metric, expected, reason in (
        (tokens, expected_tokens, "pipeline reported no tokens"),
        (cost_usd, expected_cost, "pipeline reported no cost"),
    ):
        result = metric(CASE, output)
        if expected is None:
            assert (result.status, result.value, result.reason) == (Status.SKIPPED, None, reason)
        else:
            assert (result.status, result.value) == (Status.SCORED, expected)


def test_latency_is_the_outputs_or_skipped_with_the_contracts_reason():
    assert latency_s(CASE, _output(latency=1.25)).value == 1.25
    assert latency_s(CASE, _output(latency=0.0)).value == 0.0
    missing = latency_s(CASE, _output(latency=None))
    assert (missing.status, missing.reason) == (Status.SKIPPED, "pipeline reported no latency")


def test_no_answer_skips_tokens_and_cost():
    output = CaseOutput("c1", None, retrieved=(), latency_s=0.5)
    assert tokens(CASE, output).status is Status.SKIPPED
    assert cost_usd(CASE, output).status is Status.SKIPPED
    assert latency_s(CASE, output).value == 0.5


def test_system_metrics_are_lower_is_better_opt_in_and_never_judged():
    for name in (LATENCY, TOKENS, COST):
        declared = REGISTRY.spec(name)
        assert (declared.family, declared.higher_is_better, declared.judged) == (
            "system",
            False,
            False,
        )
        assert name not in REGISTRY.names
    assert REGISTRY.select([LATENCY, TOKENS]) == (LATENCY, TOKENS)


def test_usage_on_an_answer_is_checked():
    answer = to_answer({"text": "t", "usage": {"input_tokens": 3, "cost_usd": 1}})
    assert answer.usage == Usage(3, None, 1.0)
    assert to_answer({"text": "t"}).usage is None
    for bad, message in (
        ({"input_tokens": -1}, "usage.input_tokens' must be a non-negative integer"),
        ({"output_tokens": 2.5}, "usage.output_tokens' must be a non-negative integer"),
        ({"output_tokens": True}, "usage.output_tokens' must be a non-negative integer"),
        ({"cost_usd": "0.1"}, "usage.cost_usd' must be a non-negative number"),
        ({"cost_usd": float("nan")}, "usage.cost_usd' must be a non-negative number"),
        ("lots", "expected an usage object, got str"),
    ):
        with pytest.raises(AdapterOutputError, match=message):
            to_answer({"text": "t", "usage": bad})


def test_a_replay_reports_the_recorded_latency_not_its_own_time():
    adapter = RecordedAdapter(str(SYSTEM / "outputs_slow.jsonl"))
    cases = [Case(f"s{i:02d}", "q") for i in (1, 19, 20)]
    outputs = asyncio.run(run_adapter(cases, adapter, RunSettings()))
    adapter.close()
    assert [o.latency_s for o in outputs] == [0.61, 0.79, None]
    assert outputs[0].answer.usage == Usage(101, 20, 0.001)
    assert outputs[2].answer.usage is None


@pytest.mark.parametrize(
    ("latency", "message"),
    [(-0.5, "latency_s: must be a finite number"), ("1s", "latency_s: expected a number")],
)
def test_a_bad_recorded_latency_is_bad_input_with_its_line(tmp_path, latency, message):
    path = tmp_path / "outputs.jsonl"
    lines = [
        {"case_id": "c1", "answer": {"text": "a"}, "latency_s": 0.2},
        {"case_id": "c2", "answer": {"text": "b"}, "latency_s": latency},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(AdapterLoadError, match=f"^{path}:2: {message}"):
        RecordedAdapter(str(path))


class _PricedAdapter:
    """A live pipeline that reports its usage with each answer."""

    async def answer(self, question: str) -> dict:
        await asyncio.sleep(0.05)
        return {"text": "ok", "usage": {"input_tokens": 9, "output_tokens": 1, "cost_usd": 0.5}}


def test_a_live_call_is_timed_and_its_usage_kept():
    (output,) = asyncio.run(run_adapter([CASE], _PricedAdapter(), RunSettings()))
    assert 0.05 <= output.latency_s < 5.0
    assert latency_s(CASE, output).value == output.latency_s
    assert (tokens(CASE, output).value, cost_usd(CASE, output).value) == (10.0, 0.5)
