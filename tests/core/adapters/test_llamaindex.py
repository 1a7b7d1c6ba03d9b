"""LlamaIndexAdapter on a real VectorStoreIndex query engine with LlamaIndex's MockLLM and
MockEmbedding (tests/support/frameworks/llamaindex_app.py); the CLI run is in
tests/cli/test_frameworks.py."""

from __future__ import annotations

import asyncio
import math

import pytest

pytest.importorskip(
    "llama_index.core", reason="extra not installed: pip install 'ragproof[llamaindex]'"
)

from ragproof_core.adapters.llamaindex import LlamaIndexAdapter  # noqa: E402
from ragproof_core.adapters.loading import AdapterLoadError, load_adapter  # noqa: E402
from ragproof_core.config.settings import RunSettings  # noqa: E402
from ragproof_core.model import Case, Chunk, ExpectedTool, RetrieveStep, ToolStep  # noqa: E402
from ragproof_core.run.evaluate import evaluate  # noqa: E402
from tests.support.frameworks.questions import (  # noqa: E402
    CONVERSATION_CASES,
    citations,
    retrieved_ids,
    run_cases,
    run_conversations,
)

APP = "tests.support.frameworks.llamaindex_app"
ALL_TOP_2 = {"c1": ["d1", "d3"], "c2": ["d1", "d3"], "c3": ["d1", "d3"]}


@pytest.mark.parametrize("use_async", [True, False])
def test_source_nodes_become_chunks_and_markers_cite_them(use_async):
    adapter = LlamaIndexAdapter(
        factory=f"{APP}:build_query_engine", numbered_citations=True, use_async=use_async
    )
    assert asyncio.iscoroutinefunction(adapter.run_case) is use_async
    outputs = run_cases(adapter, concurrency=2)
    assert retrieved_ids(outputs) == ALL_TOP_2
    assert citations(outputs) == {c: ("d1", "[3]") for c in ("c1", "c2", "c3")}
    c1 = outputs["c1"]
    assert c1.answer.text == "Based on [1] and [3]: What is the capital of France?"
    assert c1.answer.retrieved_chunks == c1.retrieved
    first, second = c1.retrieved
    # Documents used as nodes have no source document: no document_id is added.
    assert first == Chunk("d1", "Paris is the capital of France.", 1.0, {"source_id": "d1"})
    assert math.isclose(second.score, math.sqrt(3) / 2)


def test_factory_options_and_framework_ids_when_the_metadata_has_none():
    adapter = LlamaIndexAdapter(
        factory=f"{APP}:build_query_engine", factory_options={"top_k": 4}, use_async=False
    )
    output = run_cases(adapter)["c2"]
    assert [c.id for c in output.retrieved] == ["d1", "d3", "d7", "fw-4"]
    assert [c.score for c in output.retrieved] == pytest.approx(
        [1, math.sqrt(3) / 2, 0.5**0.5, 0.5]
    )
    # numbered_citations is off and the Response names none: no citations.
    assert output.answer.citations is None


def test_citations_from_response_metadata_key():
    adapter = LlamaIndexAdapter(factory=f"{APP}:build_citing_engine", citations_key="cited")
    outputs = run_cases(adapter)
    # A cited node maps like a source node; a cited id string is kept as it is.
    assert citations(outputs) == {c: ("d1", "d4") for c in ("c1", "c2", "c3")}
    assert retrieved_ids(outputs) == ALL_TOP_2


def test_split_documents_keep_their_source_id_and_gain_a_document_id():
    adapter = LlamaIndexAdapter(factory=f"{APP}:build_split_engine", id_key=None)
    output = run_cases(adapter)["c1"]
    assert output.answer.text == "text text text"  # MockLLM(max_tokens=3)
    # id_key = None: node ids; every node scores alike under MockEmbedding, so compare as a set.
    assert sorted(
        (c.id, c.metadata.get("source_id"), c.metadata["document_id"], c.score)
        for c in output.retrieved
    ) == [
        ("fw-1#0", "d1", "fw-1", 1.0),
        ("fw-2#0", "d3", "fw-2", 1.0),
        ("fw-3#0", "d7", "fw-3", 1.0),
        ("fw-4#0", None, "fw-4", 1.0),
    ]
    with_source_ids = LlamaIndexAdapter(factory=f"{APP}:build_split_engine")
    ids = {c.id for c in run_cases(with_source_ids)["c1"].retrieved}
    assert ids == {"d1", "d3", "d7", "fw-4#0"}


def test_load_errors():
    target = "ragproof_core.adapters.llamaindex:LlamaIndexAdapter"
    with pytest.raises(AdapterLoadError) as exc:
        load_adapter(target, {"factory": "json:loads", "factory_options": {"s": "[]"}})
    assert str(exc.value) == (
        f"building adapter {target!r} failed: factory 'json:loads' returned a 'list', "
        "not a query engine with query()"
    )


@pytest.mark.parametrize("use_async", [True, False])
def test_a_chat_engine_gets_the_earlier_turns_as_its_chat_history(use_async):
    adapter = LlamaIndexAdapter(factory=f"{APP}:build_chat_engine", use_async=use_async)
    outputs = run_conversations(adapter)
    assert [o.error for o in outputs.values()] == [None] * 5
    answers = {case_id: o.answer.text for case_id, o in outputs.items()}
    q1, q2, q3 = (case.question for case in CONVERSATION_CASES[1:4])
    # MockLLM answers with the chat it was given: the context, then the messages.
    chat = answers["c1#3"].split("-" * 20 + "\n\n", 1)[1]
    assert chat == (
        f"user: {q1}\nassistant: {answers['c1#1']}\n"
        f"user: {q2}\nassistant: {answers['c1#2']}\n"
        f"user: {q3}\nassistant: "
    )
    # An explicit chat_history replaces the engine's memory: c2 never sees c1's turns.
    assert answers["c2#1"].endswith("-" * 20 + "\n\nuser: Do you ship abroad?\nassistant: ")
    assert answers["s1"].endswith("\n\nuser: What is the warranty period?\nassistant: ")
    assert retrieved_ids(outputs)["c1#3"] == ["d1", "d3"]


def test_a_query_engine_fails_each_turn_of_a_conversation_saying_why():
    outputs = run_conversations(LlamaIndexAdapter(factory=f"{APP}:build_query_engine"))
    assert outputs["s1"].error is None
    assert "a conversation needs a chat engine with chat(chat_history=...)" in outputs["c2#1"].error
    assert "VectorStoreIndex" not in outputs["c2#1"].error


AGENT = "tests.support.frameworks.llamaindex_agent:build_agent"


@pytest.mark.parametrize("use_async", [True, False])
def test_an_agent_run_records_its_tool_call_and_both_retrievals_as_steps(use_async):
    """CONTRACT section 17: a FunctionAgent whose fake model is scripted to search, call a
    real tool and search again (a RetrieverTool over a real index, twice); the run's
    ToolCall/ToolCallResult events become the steps and the agent metrics score them."""
    adapter = LlamaIndexAdapter(factory=AGENT, use_async=use_async)
    case = Case(
        "a1",
        "What is the capital of France?",
        expected_tools=(ExpectedTool("read_passage", {"source_id": "d1"}),),
        expected_hops=(("d1",), ("d3", "d7")),
    )
    evaluation = asyncio.run(evaluate([case], adapter, RunSettings(k=5)))
    (output,) = evaluation.outputs
    assert output.error is None
    assert output.answer.text == "Paris is the capital of France [d1]."
    steps = output.answer.steps
    assert [type(s) for s in steps] == [RetrieveStep, ToolStep, RetrieveStep]
    # Cosine of "input is capital of France" (bias, capital, france) with d1's vector
    # (bias, capital, france, paris): 3 / (sqrt(3) * 2).
    # The query is the argument the agent wrote, not RetrieverTool's "input is ..." string.
    assert (steps[0].query, [c.id for c in steps[0].chunks]) == ("capital of France", ["d1", "d3"])
    assert steps[0].chunks[0] == Chunk(
        "d1",
        "Paris is the capital of France.",
        pytest.approx(math.sqrt(3) / 2),
        {"source_id": "d1"},
    )
    assert steps[1] == ToolStep(
        "read_passage",
        {"source_id": "d1", "include_title": True},
        "Paris is the capital of France.",
    )
    assert (steps[2].query, [c.id for c in steps[2].chunks]) == (
        "Paris France river Vienna",
        ["d7", "d1"],
    )
    # The answer's context is every retrieved chunk once; no single retrieval is exposed.
    assert [c.id for c in output.answer.retrieved_chunks] == ["d1", "d3", "d7"]
    assert output.retrieved is None
    scores = {
        r.metric: r.value
        for r in evaluation.results
        if r.metric.startswith(("agent", "retrieval.hop"))
    }
    assert scores == {
        "agent.tool_precision": 1.0,
        "agent.tool_recall": 1.0,
        "agent.trajectory_match": 1.0,
        "agent.steps": 3.0,
        "agent.task_completion": None,  # judged, and this run has no judge
        # hop 1 finds d1 (1/1), hop 2 finds d7 but not d3 (1/2); one hit of k = 5 each.
        "retrieval.hop_recall_at_k": 0.75,
        "retrieval.hop_precision_at_k": 0.2,
    }


def test_an_agent_gets_the_earlier_turns_as_its_chat_history():
    adapter = LlamaIndexAdapter(factory=AGENT, factory_options={"answer_with_history": True})
    outputs = run_conversations(adapter)
    assert [o.error for o in outputs.values()] == [None] * 5
    answers = {case_id: o.answer.text for case_id, o in outputs.items()}
    q1, q2, q3 = (case.question for case in CONVERSATION_CASES[1:4])
    # The model saw every earlier user turn, then the question; each turn is a fresh run,
    # so c2 never sees c1's turns.
    assert answers["c1#3"] == f"{q1} | {q2} | {q3}"
    assert answers["c2#1"] == "Do you ship abroad?"
    assert [type(s) for s in outputs["c1#3"].answer.steps] == [RetrieveStep, ToolStep, RetrieveStep]


@pytest.mark.parametrize(
    ("options", "hops"),
    [
        ({"search_with": "query_engine"}, (["d1", "d3"], ["d7", "d1"])),
        # Cosines 0.87 and 0.67 on hop 1, 0.77 and 0.67 on hop 2: hop 2 keeps nothing.
        ({"cutoff": 0.8}, (["d1"], [])),
    ],
    ids=["query_engine_tool", "empty_retrieval"],
)
def test_query_engine_tools_and_empty_retrievals_are_retrieve_steps(options, hops):
    """A QueryEngineTool's source nodes are its hop's chunks; a RetrieverTool whose
    postprocessor drops every node is a retrieve step with none, which scores 0."""
    adapter = LlamaIndexAdapter(factory=AGENT, factory_options=options)
    case = Case("a1", "What is the capital of France?", expected_hops=(("d1",), ("d7",)))
    evaluation = asyncio.run(evaluate([case], adapter, RunSettings(k=5)))
    (output,) = evaluation.outputs
    steps = output.answer.steps
    assert [(type(s), getattr(s, "query", None)) for s in steps] == [
        (RetrieveStep, "capital of France"),
        (ToolStep, None),
        (RetrieveStep, "Paris France river Vienna"),
    ]
    assert ([c.id for c in steps[0].chunks], [c.id for c in steps[2].chunks]) == hops
    recall = next(r for r in evaluation.results if r.metric == "retrieval.hop_recall_at_k")
    assert recall.value == (1.0 if hops[1] else 0.5)
