"""HaystackAdapter on real Haystack pipelines (InMemoryDocumentStore, InMemoryBM25Retriever,
PromptBuilder, AnswerBuilder) with a scripted generator component
(tests/support/frameworks/haystack_app.py); the CLI run is in
tests/cli/test_frameworks.py."""

from __future__ import annotations

import asyncio
import os

import pytest

# Haystack decides on telemetry when first imported; the adapter turns it off before
# importing, but this module imports Haystack first: tests/conftest.py sets it for the session.
pytest.importorskip("haystack", reason="extra not installed: pip install 'ragproof[haystack]'")

from ragproof_core.adapters.haystack import HaystackAdapter  # noqa: E402
from ragproof_core.adapters.loading import AdapterLoadError, load_adapter  # noqa: E402
from tests.support.frameworks.questions import (  # noqa: E402
    CONVERSATION_CASES,
    citations,
    retrieved_ids,
    run_cases,
    run_conversations,
)

APP = "tests.support.frameworks.haystack_app"
TARGET = "ragproof_core.adapters.haystack:HaystackAdapter"
BM25 = {"c1": ["d1", "d3"], "c2": ["d3", "d1"], "c3": ["d7", "d1"]}


@pytest.mark.parametrize("use_async", [True, False])
def test_defaults_find_the_question_inputs_replies_and_documents(use_async):
    adapter = HaystackAdapter(factory=f"{APP}:build_pipeline", use_async=use_async)
    assert adapter.inputs == (("retriever", "query"), ("prompt_builder", "question"))
    assert asyncio.iscoroutinefunction(adapter.run_case) is use_async
    outputs = run_cases(adapter, concurrency=2)
    assert retrieved_ids(outputs) == BM25
    # meta["citations"] holds Documents; each maps to its source_id.
    assert citations(outputs) == {"c1": ("d1",), "c2": ("d3",), "c3": ("d7",)}
    assert [o.answer.text for _, o in sorted(outputs.items())] == [
        "Paris [1]",
        "Bonn [2] [5]",
        "The Danube",
    ]
    assert outputs["c1"].retrieved[0].metadata == {"source_id": "d1"}
    assert outputs["c1"].retrieved[0].score > outputs["c1"].retrieved[1].score > 0


def test_numbered_citations_when_the_reply_meta_names_none():
    adapter = HaystackAdapter(
        factory=f"{APP}:build_pipeline", citations_key="sources", numbered_citations=True
    )
    outputs = run_cases(adapter)
    assert citations(outputs) == {"c1": ("d1",), "c2": ("d1", "[5]"), "c3": ()}


def test_answer_builder_references_are_the_citations():
    adapter = HaystackAdapter(
        factory=f"{APP}:build_answer_pipeline",
        citations_key="none",
        inputs=["retriever.query", "prompt_builder.question", "answer_builder.query"],
    )
    outputs = run_cases(adapter)
    # The retriever's documents are the retrieval; "answers" wins over the generator's replies.
    assert retrieved_ids(outputs) == BM25
    assert citations(outputs) == {"c1": ("d1",), "c2": ("d1",), "c3": ()}
    assert outputs["c2"].answer.text == "Bonn [2] [5]"


def test_string_replies_without_documents_do_not_expose_retrieval():
    adapter = HaystackAdapter(factory=f"{APP}:build_generation_only")
    # No run_async in Haystack 2.x's Pipeline would also mean sync; here the choice is automatic.
    outputs = run_cases(adapter)
    assert retrieved_ids(outputs) == {"c1": None, "c2": None, "c3": None}
    assert [(o.answer.text, o.answer.citations) for _, o in sorted(outputs.items())] == [
        ("Paris [1]", None),
        ("Bonn [2] [5]", None),
        ("The Danube", None),
    ]


def test_ambiguous_outputs_name_the_option_to_set():
    adapter = HaystackAdapter(
        factory=f"{APP}:build_answer_pipeline",
        inputs=["retriever.query", "prompt_builder.question", "answer_builder.query"],
        documents_output="generator.documents",
    )
    assert run_cases(adapter)["c1"].error == (
        "AdapterOutputError: option 'documents_output': the pipeline returned no "
        "generator.documents (in run_case())"
    )


def test_inputs_as_a_table_of_component_to_input_names():
    adapter = HaystackAdapter(
        factory=f"{APP}:build_answer_pipeline",
        inputs={"retriever": "query", "prompt_builder": ["question"], "answer_builder": "query"},
    )
    assert adapter.inputs == (
        ("retriever", "query"),
        ("prompt_builder", "question"),
        ("answer_builder", "query"),
    )
    assert retrieved_ids(run_cases(adapter)) == BM25
    with pytest.raises(AdapterLoadError) as exc:
        load_adapter(TARGET, {"factory": f"{APP}:build_pipeline", "inputs": {"retriever": 3}})
    assert str(exc.value) == (
        f"building adapter {TARGET!r} failed: option 'inputs': retriever must name an input "
        "or a list of inputs"
    )


def test_load_errors_list_the_pipeline_inputs():
    with pytest.raises(AdapterLoadError) as exc:
        load_adapter(TARGET, {"factory": f"{APP}:build_pipeline", "inputs": ["retriever.text"]})
    assert str(exc.value) == (
        f"building adapter {TARGET!r} failed: option 'inputs': the pipeline has no open input "
        "retriever.text (inputs: retriever.query, retriever.filters, retriever.top_k, "
        "retriever.scale_score, prompt_builder.question, prompt_builder.template, "
        "prompt_builder.template_variables)"
    )
    with pytest.raises(AdapterLoadError, match="option 'answer_output' must look like"):
        load_adapter(TARGET, {"factory": f"{APP}:build_pipeline", "answer_output": "replies"})
    with pytest.raises(AdapterLoadError, match="returned a 'dict', not a Haystack Pipeline"):
        load_adapter(TARGET, {"factory": "json:loads", "factory_options": {"s": "{}"}})


def test_telemetry_is_off_unless_the_user_set_it(monkeypatch):
    monkeypatch.delenv("HAYSTACK_TELEMETRY_ENABLED", raising=False)
    HaystackAdapter(factory=f"{APP}:build_pipeline")
    assert os.environ["HAYSTACK_TELEMETRY_ENABLED"] == "False"
    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "0")
    HaystackAdapter(factory=f"{APP}:build_pipeline")
    assert os.environ["HAYSTACK_TELEMETRY_ENABLED"] == "0"


@pytest.mark.parametrize("use_async", [True, False])
def test_the_history_input_gets_the_earlier_turns_as_chat_messages(use_async):
    adapter = HaystackAdapter(factory=f"{APP}:build_history_pipeline", use_async=use_async)
    outputs = run_conversations(adapter)
    assert [o.error for o in outputs.values()] == [None] * 5
    seen = adapter.pipeline.get_component("generator").seen
    by_question = {m[-1].text: [(str(x.role.value), x.text) for x in m] for m in seen}
    q1, q2, q3 = (case.question for case in CONVERSATION_CASES[1:4])
    assert by_question[q3] == [
        ("user", q1),
        ("assistant", f"answer to {q1}"),
        ("user", q2),
        ("assistant", f"answer to {q2}"),
        ("user", q3),
    ]
    assert by_question["Do you ship abroad?"] == [("user", "Do you ship abroad?")]
    assert by_question["What is the warranty period?"] == [("user", "What is the warranty period?")]
    assert outputs["c1#3"].answer.text == f"answer to {q3}"


def test_a_pipeline_without_a_history_input_fails_each_turn_naming_the_option():
    outputs = run_conversations(HaystackAdapter(factory=f"{APP}:build_pipeline"))
    assert outputs["s1"].error is None
    assert "set option history_inputs" in outputs["c1#1"].error
    assert outputs["c1#2"].error is not None
