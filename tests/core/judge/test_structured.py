"""Structured output (CONTRACT section 24): each prompt's reply shape as a strict JSON
schema, sent as ``response_format`` when LiteLLM says the model takes one, and part
of the cache key, so a reply asked for by prompt alone never serves a schema run."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.judge import session
from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.schemas import (
    REPLY_SCHEMAS,
    REPLY_SHAPES,
    combined_schema,
    parse_reply,
    reply_schema,
    response_format,
)
from ragproof_core.run.evaluate import evaluate
from tests.conftest import FIXTURES
from tests.core.judge.conftest import make_judge, run
from tests.support.judge_server import JudgeServer, strict_schema_fault

INPUTS = {"question": "What is the capital of France?", "answer": "Paris."}
RECORDED = FIXTURES / "recorded"


def test_every_reply_shape_has_a_strict_schema() -> None:
    assert set(REPLY_SCHEMAS) == set(REPLY_SHAPES)
    for name, schema in REPLY_SCHEMAS.items():
        assert strict_schema_fault(schema) is None, name
    rubric = reply_schema("custom.tone", ("no", "partly", "yes"))
    assert rubric["properties"]["verdict"] == {"type": "string", "enum": ["no", "partly", "yes"]}
    combined = combined_schema({"refusal": None, "custom.tone": ("no", "yes")})
    assert combined["required"] == ["refusal", "custom.tone"]
    assert strict_schema_fault(combined) is None
    # A rubric's name is its metric's: providers take [A-Za-z0-9_-] names only.
    assert response_format("custom.tone", rubric)["json_schema"]["name"] == "custom_tone"


@pytest.mark.parametrize(
    ("prompt", "reply"),
    [
        ("groundedness", {"claims": [{"claim": "Paris.", "supported": True}]}),
        ("answer_relevance", {"verdict": "partial"}),
        ("knowledge_retention", {"turns": [{"turn": 2, "retained": False}]}),
        ("context_relevance", {"verdicts": [{"chunk_id": "d1", "relevance": "irrelevant"}]}),
    ],
)
def test_a_reply_the_schema_takes_is_one_the_validator_takes(prompt: str, reply: dict) -> None:
    jsonschema.validate(reply, REPLY_SCHEMAS[prompt])
    assert parse_reply(prompt, json.dumps(reply)) == reply


def _structured(monkeypatch: pytest.MonkeyPatch, takes_schema: bool) -> None:
    monkeypatch.setattr(session, "supports_response_schema", lambda model: takes_schema)


def test_schema_and_prompt_only_replies_never_share_cache_entries(
    server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_path = tmp_path / "cache.sqlite"
    _structured(monkeypatch, False)
    plain = make_judge(server.url, cache_path)
    assert run(plain.ask("answer_relevance", INPUTS)).ok
    _structured(monkeypatch, True)
    schema = make_judge(server.url, cache_path)
    asked = run(schema.ask("answer_relevance", INPUTS))
    assert asked.ok and not asked.cached  # the prompt-only reply was not served
    assert [r.body["response_format"]["type"] for r in server.requests] == [
        "json_object",
        "json_schema",
    ]
    assert server.requests[1].body["response_format"]["json_schema"] == {
        "name": "answer_relevance",
        "schema": REPLY_SCHEMAS["answer_relevance"],
        "strict": True,
    }
    # Each kind serves its own again, and only its own.
    assert run(schema.ask("answer_relevance", INPUTS)).cached
    _structured(monkeypatch, False)
    again = make_judge(server.url, cache_path)
    assert run(again.ask("answer_relevance", INPUTS)).cached
    assert server.request_count == 2
    with JudgeCache(cache_path) as cache:
        assert cache.count() == 2
    prompt = plain.prompt("answer_relevance")
    assert plain.prompt_key(prompt) == prompt.sha256  # the keys a cache already holds
    assert schema.prompt_key(prompt) == f"{prompt.sha256}+json_schema"
    assert (plain.reply_format, schema.reply_format) == ("json_object", "json_schema")


@pytest.mark.parametrize("mode", ["per_metric", "combined"])
def test_a_schema_run_sends_every_prompts_schema_and_the_replies_fit_it(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _structured(monkeypatch, True)
    judge = make_judge(server.url, mode=mode)
    adapter = RecordedAdapter(str(RECORDED / "outputs.jsonl"))
    cases = load_dataset(RECORDED / "cases.jsonl")
    evaluation = run(evaluate(cases, adapter, RunSettings(concurrency=4), judge))
    assert judge.stats.judge_errors == 0
    assert all(r.body["response_format"]["type"] == "json_schema" for r in server.requests)
    assert server.schema_violations == []
    if mode == "combined":
        parts = server.requests[0].parts
        sent = server.requests[0].body["response_format"]["json_schema"]["schema"]
        assert sent["required"] == parts
    assert evaluation.status == "completed"


def test_a_schema_the_provider_refuses_is_a_400_naming_the_fault(server: JudgeServer) -> None:
    from ragproof_core.judge.client import LiteLLMClient, TransportError

    loose = {"type": "object", "properties": {"refused": {"type": "boolean"}}}
    client = LiteLLMClient("openai/judge-test", server.url, max_attempts=1)
    messages = [{"role": "system", "content": "ragproof-prompt: refusal"}]
    with pytest.raises(TransportError, match="additionalProperties"):
        run(client.complete(messages, response_format("refusal", loose)))
