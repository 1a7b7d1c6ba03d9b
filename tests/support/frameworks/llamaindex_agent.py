"""A LlamaIndex agent for the steps tests: a real ``FunctionAgent`` over LlamaIndex's own
``MockFunctionCallingLLM``, a real tool and a real retriever tool (no network).

The model is scripted by how many tool results its messages already hold, so
concurrent cases never share a script: it asks ``search`` for "capital of
France", then ``read_passage`` for passage d1, then ``search`` again with a
rewritten query, then answers. ``search`` is a ``RetrieverTool`` over a
``VectorStoreIndex`` of the four test passages (a retrieve step); ``read_passage``
a ``FunctionTool`` (a tool step).

``KeywordEmbedding`` is a mock embedding that still ranks: a bias component and
one count per word of ``VOCABULARY``, so cosine similarity follows shared words.
"capital of France" shares "capital" and "france" with d1 and "capital" with d3:
d1, d3. "Paris France river Vienna" shares "river" and "vienna" with d7 and
"paris" and "france" with d1 (which is longer: a lower cosine): d7, d1. The
retriever keeps the top 2.
"""

from __future__ import annotations

import re

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.tools import FunctionTool, QueryEngineTool, RetrieverTool

from tests.support.frameworks.corpus import PASSAGES

VOCABULARY = ("capital", "france", "paris", "germany", "river", "vienna", "moons")
BY_SOURCE = {meta.get("source_id"): text for _, text, meta in PASSAGES}
ANSWER = "Paris is the capital of France [d1]."
SCRIPT = (
    ("search", {"input": "capital of France"}),
    ("read_passage", {"source_id": "d1", "include_title": True}),
    ("search", {"input": "Paris France river Vienna"}),
)


class KeywordEmbedding(BaseEmbedding):
    def _vector(self, text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        return [1.0] + [float(words.count(word)) for word in VOCABULARY]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


def read_passage(source_id: str, include_title: bool = False) -> str:
    """The full text of one passage, by its source id."""
    return BY_SOURCE.get(source_id, "no such passage")


def scripted_reply(messages: list[ChatMessage], answer_with_history: bool) -> ChatMessage:
    """The next scripted tool call, by the number of tool results so far; then the answer
    (with ``answer_with_history``: the user messages the model was given, joined by " | ")."""
    done = sum(message.role == MessageRole.TOOL for message in messages)
    if done < len(SCRIPT):
        name, arguments = SCRIPT[done]
        call = ToolCallBlock(tool_call_id=f"call-{done}", tool_name=name, tool_kwargs=arguments)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
    if answer_with_history:
        asked = [m.content for m in messages if m.role == MessageRole.USER]
        return ChatMessage(role=MessageRole.ASSISTANT, content=" | ".join(asked))
    return ChatMessage(role=MessageRole.ASSISTANT, content=ANSWER)


def build_agent(
    answer_with_history: bool = False, search_with: str = "retriever", cutoff: float = 0.0
) -> FunctionAgent:
    """The agent; ``search`` is a ``RetrieverTool`` (dropping nodes scored below
    ``cutoff``), or with ``search_with = "query_engine"`` a ``QueryEngineTool`` over
    the same index (``MockLLM`` writes its answer)."""
    embedding = KeywordEmbedding(embed_dim=len(VOCABULARY) + 1)
    documents = [
        Document(text=text, id_=doc_id, metadata=dict(meta)) for doc_id, text, meta in PASSAGES
    ]
    # The Documents are the nodes: no splitter, so node ids are the document ids.
    index = VectorStoreIndex(nodes=documents, embed_model=embedding)
    describe = {"name": "search", "description": "Search the passages."}
    if search_with == "query_engine":
        engine = index.as_query_engine(similarity_top_k=2, llm=MockLLM())
        search = QueryEngineTool.from_defaults(engine, **describe)
    else:
        search = RetrieverTool.from_defaults(
            index.as_retriever(similarity_top_k=2),
            node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=cutoff)],
            **describe,
        )
    return FunctionAgent(
        tools=[search, FunctionTool.from_defaults(read_passage)],
        llm=MockFunctionCallingLLM(
            response_generator=lambda messages, **_: scripted_reply(messages, answer_with_history)
        ),
    )
