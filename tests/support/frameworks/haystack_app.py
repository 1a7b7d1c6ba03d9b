"""A Haystack RAG app for the adapter tests: a real Pipeline with an InMemoryDocumentStore,
InMemoryBM25Retriever (top 2) and PromptBuilder, and a small generator component
that answers from a script instead of a model (no network).

BM25 ranks the test passages for the three test questions as
(tests/fixtures/frameworks/README.md):

    c1 "What is the capital of France?"        d1, d3
    c2 "What was the capital of West Germany?"  d3, d1
    c3 "Which river flows through Vienna, ..."  d7, d1

The generator's reply for a question is ``ANSWERS[question]``; its ``meta``
cites the first document it was given (``citations``: a list of Documents).
"""

from __future__ import annotations

from haystack import Document, Pipeline, component
from haystack.components.builders import PromptBuilder
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from tests.support.frameworks.corpus import PASSAGES

ANSWERS = {
    "What is the capital of France?": "Paris [1]",
    "What was the capital of West Germany?": "Bonn [2] [5]",
    "Which river flows through Vienna, the capital of Austria?": "The Danube",
}


@component
class ScriptedGenerator:
    """Replies like a chat generator, from ``ANSWERS``; sync and async."""

    @component.output_types(replies=list[ChatMessage])
    def run(self, prompt: str, documents: list[Document]):
        question = prompt.removeprefix("Question: ")
        reply = ChatMessage.from_assistant(
            ANSWERS.get(question, "I do not know."), meta={"citations": documents[:1]}
        )
        return {"replies": [reply]}

    @component.output_types(replies=list[ChatMessage])
    async def run_async(self, prompt: str, documents: list[Document]):
        return self.run(prompt, documents)


def _async_capable_pipeline() -> Pipeline:
    """Haystack 3's Pipeline has run_async; Haystack 2.x needs its AsyncPipeline for that."""
    import haystack

    return getattr(haystack, "AsyncPipeline", Pipeline)()


def build_pipeline(top_k: int = 2) -> Pipeline:
    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(id=doc_id, content=text, meta=dict(meta)) for doc_id, text, meta in PASSAGES]
    )
    pipeline = _async_capable_pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=top_k))
    pipeline.add_component(
        "prompt_builder", PromptBuilder("Question: {{ question }}", required_variables=["question"])
    )
    pipeline.add_component("generator", ScriptedGenerator())
    pipeline.connect("prompt_builder.prompt", "generator.prompt")
    pipeline.connect("retriever.documents", "generator.documents")
    return pipeline


def build_answer_pipeline() -> Pipeline:
    """``build_pipeline`` plus Haystack's ``AnswerBuilder`` with a ``[n]`` reference
    pattern: the answer is a ``GeneratedAnswer`` whose documents are marked ``referenced``."""
    from haystack.components.builders import AnswerBuilder

    pipeline = build_pipeline()
    pipeline.add_component(
        "answer_builder",
        AnswerBuilder(reference_pattern=r"\[(\d+)\]", return_only_referenced_documents=False),
    )
    pipeline.connect("generator.replies", "answer_builder.replies")
    pipeline.connect("retriever.documents", "answer_builder.documents")
    return pipeline


@component
class StringGenerator:
    """A legacy-style generator: replies are plain strings, and it has no run_async."""

    @component.output_types(replies=list[str])
    def run(self, prompt: str):
        return {"replies": [ANSWERS.get(prompt.removeprefix("Question: "), "I do not know.")]}


def build_generation_only() -> Pipeline:
    """No retriever: the pipeline returns no documents, so retrieval is not exposed."""
    pipeline = Pipeline()
    pipeline.add_component(
        "prompt_builder", PromptBuilder("Question: {{ question }}", required_variables=["question"])
    )
    pipeline.add_component("generator", StringGenerator())
    pipeline.connect("prompt_builder.prompt", "generator.prompt")
    return pipeline


@component
class HistoryGenerator:
    """A chat generator stand-in taking the earlier turns as ``ChatMessage``s: it keeps
    every message list it was given (history, then the question) and answers from the
    question, so replies do not depend on call order."""

    def __init__(self) -> None:
        self.seen: list[list[ChatMessage]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(
        self, question: str, documents: list[Document], history: list[ChatMessage] | None = None
    ):
        self.seen.append([*(history or []), ChatMessage.from_user(question)])
        return {"replies": [ChatMessage.from_assistant(f"answer to {question}")]}

    @component.output_types(replies=list[ChatMessage])
    async def run_async(
        self, question: str, documents: list[Document], history: list[ChatMessage] | None = None
    ):
        return self.run(question, documents, history)


def build_history_pipeline() -> Pipeline:
    """A retriever feeding ``HistoryGenerator``, whose open ``history`` input the adapter
    finds by name."""
    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(id=doc_id, content=text, meta=dict(meta)) for doc_id, text, meta in PASSAGES]
    )
    pipeline = _async_capable_pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=2))
    pipeline.add_component("generator", HistoryGenerator())
    pipeline.connect("retriever.documents", "generator.documents")
    return pipeline
