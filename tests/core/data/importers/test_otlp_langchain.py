"""Real traces: a LangChain pipeline (a fake chat model, a real in-memory vector store
retriever and a real tool) instrumented with openinference-instrumentation-langchain,
its spans exported by the OpenTelemetry SDK's own OTLP/JSON file exporter, imported, and
checked against what the pipeline did."""

from __future__ import annotations

import hashlib
import time

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation import using_session
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from ragproof_core.data.importers.otlp import import_otlp

# Raised inside openinference-instrumentation-langchain 0.1.80 against langchain-core 1.x.
pytestmark = pytest.mark.filterwarnings(r"ignore:Calling \.text\(\) as a method is deprecated")

CORPUS = [
    "Refunds are accepted within 30 days of delivery.",
    "Opened items can be returned within 14 days.",
    "Standard shipping takes three working days.",
    "Gift cards cannot be refunded.",
]
QUESTIONS = [
    ("What is the refund window?", "session-7"),
    ("And for opened items?", "session-7"),
    ("How long does shipping take?", None),
]


class Alternating(SpanProcessor):
    """Hands each ended span to the next of two exporters in turn, so every trace is
    split over two files, as spans of one trace often arrive."""

    def __init__(self, *exporters: FileSpanExporter) -> None:
        self.exporters = exporters
        self.count = 0

    def on_end(self, span: ReadableSpan) -> None:
        self.exporters[self.count % len(self.exporters)].export([span])
        self.count += 1

    def shutdown(self) -> None:
        for exporter in self.exporters:
            exporter.shutdown()


@pytest.fixture
def traced(tmp_path):
    files = [tmp_path / "spans-1.jsonl", tmp_path / "spans-2.jsonl"]
    provider = TracerProvider()
    provider.add_span_processor(Alternating(*(FileSpanExporter(path) for path in files)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield files, provider
    finally:
        instrumentor.uninstrument()


def test_imported_cases_are_what_the_instrumented_pipeline_did(traced):
    files, provider = traced
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=text) for text in CORPUS])
    retriever = store.as_retriever(search_kwargs={"k": 2})

    @tool
    def order_status(order_id: str) -> str:
        """Look up an order's status."""
        return f"order {order_id} shipped"

    replies = [
        AIMessage(
            content=f"Answer {n}.",
            usage_metadata={
                "input_tokens": 100 + n,
                "output_tokens": n,
                "total_tokens": 100 + 2 * n,
            },
        )
        for n in range(1, len(QUESTIONS) + 1)
    ]
    model = GenericFakeChatModel(messages=iter(replies))
    retrieved: list[list[str]] = []

    def remember(docs):
        retrieved.append([doc.page_content for doc in docs])
        return docs

    prompt = ChatPromptTemplate.from_template("Context: {context}\nStatus: {status}\nQ: {question}")
    chain = (
        {
            "context": retriever | RunnableLambda(remember),
            "question": RunnablePassthrough(),
            "status": RunnableLambda(lambda q: order_status.invoke({"order_id": "A-17"})),
        }
        | prompt
        | model
        | StrOutputParser()
    )
    answers, walls = [], []
    for question, session in QUESTIONS:
        started = time.perf_counter()
        if session is None:
            answers.append(chain.invoke(question))
        else:
            with using_session(session):
                answers.append(chain.invoke(question))
        walls.append(time.perf_counter() - started)
    provider.shutdown()
    assert all(path.stat().st_size for path in files)

    imported = import_otlp(files)
    conversation, single = imported.cases
    assert conversation["id"] == "session-7" and conversation["kind"] == "conversation"
    assert [turn["question"] for turn in conversation["turns"]] == [q for q, _ in QUESTIONS[:2]]
    assert single["question"] == QUESTIONS[2][0]
    assert single["id"] == single["metadata"]["trace_id"] and len(single["id"]) == 32
    lines = [*imported.outputs[0]["turns"], imported.outputs[1]]
    assert imported.outputs[1]["case_id"] == single["id"]
    for n, line in enumerate(lines):
        # LangChain's documents carry no document.id: the id is the content's hash.
        chunks = [
            {"id": "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16], "text": text}
            for text in retrieved[n]
        ]
        assert line["retrieve"] == chunks
        assert line["answer"]["text"] == answers[n] == f"Answer {n + 1}."
        query = QUESTIONS[n][0]
        assert line["answer"]["steps"] == [
            {"type": "retrieve", "query": query, "chunks": chunks},
            {
                "type": "tool",
                "name": "order_status",
                "arguments": {"input": "A-17"},
                "output": "order A-17 shipped",
            },
        ] or line["answer"]["steps"] == [
            # The parallel branches may start in either order.
            {
                "type": "tool",
                "name": "order_status",
                "arguments": {"input": "A-17"},
                "output": "order A-17 shipped",
            },
            {"type": "retrieve", "query": query, "chunks": chunks},
        ]
        assert line["answer"]["usage"] == {"input_tokens": 101 + n, "output_tokens": n + 1}
        assert 0 < line["latency_s"] <= walls[n]
