"""A LangChain RAG app for the adapter tests: real LCEL runnables, LangChain's own fakes.

Retrieval: an ``InMemoryVectorStore`` over the four test passages, embedded by
``DeterministicFakeEmbedding`` (a hash of the text: no model, no network), top 3.
Its ranking is arbitrary but fixed; for the three test questions it is
(tests/fixtures/frameworks/README.md):

    c1 "What is the capital of France?"        fw-4, d3, d1
    c2 "What was the capital of West Germany?"  fw-4, d7, d1
    c3 "Which river flows through Vienna, ..."  d1, d3, d7

Generation: ``FakeListChatModel`` replies from a script, in call order (the
test configs run one case at a time, so reply i answers case i).
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from tests.support.frameworks.corpus import PASSAGES

TOP_K = 3
PROMPT = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")


def build_retriever():
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    store.add_documents(
        [
            Document(page_content=text, metadata=dict(meta), id=doc_id)
            for doc_id, text, meta in PASSAGES
        ]
    )
    return store.as_retriever(search_kwargs={"k": TOP_K})


def build_chain(replies: tuple[str, ...] = ("Paris", "Bonn", "Vienna")):
    """The "RAG with sources" shape: {"question", "context", "answer", "citations"}.

    ``citations`` are the first two context Documents (mapped to chunk ids by the adapter).
    """
    llm = FakeListChatModel(responses=list(replies))
    answer = PROMPT | llm | StrOutputParser()
    return (
        RunnableParallel(context=build_retriever(), question=RunnablePassthrough())
        .assign(answer=answer)
        .assign(citations=RunnableLambda(lambda out: out["context"][:2]))
    )


def build_message_chain(replies: tuple[str, ...] = ("Paris [3]", "Bonn [1] [4]", "The Danube")):
    """Prompt and chat model only: the output is an ``AIMessage``, the input {"question": ...}.

    Retrieval comes from ``build_retriever`` given to the adapter separately.
    """
    prompt = ChatPromptTemplate.from_template("Question: {question}")
    return prompt | FakeListChatModel(responses=list(replies))
