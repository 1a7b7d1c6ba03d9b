"""Coercion of adapter output into Chunk and Answer: accepted shapes and exact rejections."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ragproof_core.adapters.coerce import (
    AdapterOutputError,
    to_answer,
    to_chunk,
    to_chunks,
    to_steps,
)
from ragproof_core.model import Answer, Chunk, RetrieveStep, ToolStep


@dataclass
class ForeignChunk:  # another library's record type, duck-typed
    id: str
    text: str
    score: float | None = None


class ForeignAnswer:
    def __init__(self, text, citations=None):
        self.text = text
        self.citations = citations


def test_chunk_from_dataclass_is_returned_as_is():
    chunk = Chunk("a", "alpha", 0.5, {"document_id": "d"})
    assert to_chunk(chunk) is chunk


def test_chunk_from_dict_with_int_score_and_no_metadata():
    assert to_chunk({"id": "a", "text": "alpha", "score": 1}) == Chunk("a", "alpha", 1.0, {})
    assert to_chunk({"id": "a", "text": "alpha", "extra": "ignored"}) == Chunk("a", "alpha")


def test_chunk_from_object_with_attributes():
    assert to_chunk(ForeignChunk("a", "alpha", 0.25)) == Chunk("a", "alpha", 0.25)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"text": "alpha"}, "chunk is missing 'id'"),
        ({"id": 3, "text": "alpha"}, "chunk 'id' must be a string, got int"),
        ({"id": "a"}, "chunk 'a' is missing 'text'"),
        ({"id": "a", "text": None}, "chunk 'a' 'text' must be a string, got None"),
        ({"id": "a", "text": "t", "score": "high"}, "chunk 'a' 'score' must be a number, got str"),
        ({"id": "a", "text": "t", "score": True}, "chunk 'a' 'score' must be a number, got bool"),
        (
            {"id": "a", "text": "t", "score": 10**400},
            "chunk 'a' 'score' is beyond a float's range (1.8e308)",
        ),
        (
            {"id": "a", "text": "t", "metadata": [1]},
            "chunk 'a' 'metadata' must be a dict, got list",
        ),
        (Chunk(5, "t"), "chunk 'id' must be a string, got int"),
        ("a chunk", "expected a chunk, got str"),
        (None, "expected a chunk, got None"),
        (7, "expected a chunk, got int"),
    ],
)
def test_malformed_chunk(obj, message):
    with pytest.raises(AdapterOutputError) as info:
        to_chunk(obj)
    assert str(info.value) == message


def test_chunks_from_list_and_generator():
    items = [{"id": "a", "text": "alpha"}, Chunk("b", "beta")]
    assert to_chunks(items) == (Chunk("a", "alpha"), Chunk("b", "beta"))
    assert to_chunks(iter(items)) == (Chunk("a", "alpha"), Chunk("b", "beta"))
    assert to_chunks([]) == ()


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([{"id": "a", "text": "x"}, {"id": "b"}], "chunk 1: chunk 'b' is missing 'text'"),
        ({"id": "a", "text": "x"}, "expected a list of chunks, got dict"),
        ("abc", "expected a list of chunks, got str"),
        (None, "expected a list of chunks, got None"),
        (3, "expected a list of chunks, got int"),
    ],
)
def test_malformed_chunk_list(obj, message):
    with pytest.raises(AdapterOutputError) as info:
        to_chunks(obj)
    assert str(info.value) == message


def test_answer_from_dict_with_every_key():
    answer = to_answer(
        {"text": "Paris", "retrieved_chunks": [{"id": "a", "text": "alpha"}], "citations": ["a"]}
    )
    assert answer == Answer("Paris", (Chunk("a", "alpha"),), ("a",))


def test_answer_optional_keys_stay_none():
    assert to_answer({"text": "Paris"}) == Answer("Paris", None, None)
    assert to_answer({"text": "", "retrieved_chunks": None, "citations": None}) == Answer("")


def test_answer_from_dataclass_and_from_object():
    assert to_answer(Answer("x", [Chunk("a", "t")], ["a"])) == Answer(
        "x", (Chunk("a", "t"),), ("a",)
    )
    assert to_answer(ForeignAnswer("y", ["a"])) == Answer("y", None, ("a",))


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            "Paris",
            "expected an Answer or a dict with 'text', got a bare string; wrap it as {'text': ...}",
        ),
        (None, "expected an answer, got None"),
        ({"answer": "Paris"}, "answer is missing 'text'"),
        ({"text": 42}, "answer 'text' must be a string, got int"),
        (
            {"text": "x", "retrieved_chunks": [{"id": "a"}]},
            "answer 'retrieved_chunks': chunk 0: chunk 'a' is missing 'text'",
        ),
        ({"text": "x", "citations": "a"}, "answer 'citations' must be a list of chunk id strings"),
        ({"text": "x", "citations": [1]}, "answer 'citations' must be a list of chunk id strings"),
        (["Paris"], "expected an answer, got list"),
        (
            {"text": "x", "usage": {"cost_usd": -(10**400)}},
            "answer 'usage.cost_usd' must be a non-negative number, got " + repr(-(10**400)),
        ),
        (
            {"text": "x", "usage": {"cost_usd": 10**400}},
            "answer 'usage.cost_usd' is beyond a float's range (1.8e308)",
        ),
    ],
)
def test_malformed_answer(obj, message):
    with pytest.raises(AdapterOutputError) as info:
        to_answer(obj)
    assert str(info.value) == message


@dataclass
class ForeignToolCall:  # a framework's own record of a tool call, duck-typed
    type: str
    name: str
    arguments: dict
    output: str | None = None


def test_steps_from_dicts_dataclasses_and_objects_keep_their_order():
    steps = to_steps(
        [
            {"type": "retrieve", "query": "refund", "chunks": [{"id": "a", "text": "alpha"}]},
            ToolStep("lookup", {"id": 1}),
            ForeignToolCall("tool", "refund", {"order": {"id": 1}}, "done"),
            RetrieveStep("again", [Chunk("b", "beta")]),
        ]
    )
    assert steps == (
        RetrieveStep("refund", (Chunk("a", "alpha"),)),
        ToolStep("lookup", {"id": 1}, None),
        ToolStep("refund", {"order": {"id": 1}}, "done"),
        RetrieveStep("again", (Chunk("b", "beta"),)),
    )


def test_answer_steps_absent_null_and_empty_stay_distinct():
    assert to_answer({"text": "x"}).steps is None
    assert to_answer({"text": "x", "steps": None}).steps is None
    assert to_answer({"text": "x", "steps": []}).steps == ()
    step = {"type": "tool", "name": "f", "arguments": {}}
    assert to_answer({"text": "x", "steps": [step]}).steps == (ToolStep("f", {}),)


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ("search", "answer 'steps': expected a list of steps, got str"),
        ([{"query": "q"}], "answer 'steps': step 0: step is missing 'type'"),
        (
            [{"type": "search"}],
            "answer 'steps': step 0: step 'type' must be 'retrieve' or 'tool', got 'search'",
        ),
        ([{"type": "retrieve", "chunks": []}], "answer 'steps': step 0: step is missing 'query'"),
        ([{"type": "retrieve", "query": "q"}], "answer 'steps': step 0: step is missing 'chunks'"),
        (
            [{"type": "retrieve", "query": "q", "chunks": [{"id": 1, "text": "t"}]}],
            "answer 'steps': step 0: 'chunks': chunk 0: chunk 'id' must be a string, got int",
        ),
        (
            [{"type": "tool", "name": "f"}],
            "answer 'steps': step 0: tool step 'f' is missing 'arguments'",
        ),
        (
            [{"type": "tool", "name": "f", "arguments": [1]}],
            "answer 'steps': step 0: tool step 'f' 'arguments' must be an object, got list",
        ),
        (
            [{"type": "tool", "name": "", "arguments": {}}],
            "answer 'steps': step 0: step 'name' must not be empty",
        ),
        (
            [{"type": "tool", "name": "f", "arguments": {}, "output": 3}],
            "answer 'steps': step 0: step 'output' must be a string, got int",
        ),
    ],
)
def test_malformed_steps_name_the_step_and_key(steps, message):
    with pytest.raises(AdapterOutputError) as info:
        to_answer({"text": "x", "steps": steps})
    assert str(info.value) == message
