"""A LlamaIndex RAG app for the adapter tests: a real VectorStoreIndex and query engine,
LlamaIndex's own ``MockLLM`` and ``MockEmbedding`` (no model, no network).

``MockEmbedding`` embeds every question as the same constant vector, so the
ranking comes from the documents' own embeddings, given here: cosine similarity
to the constant query falls d1 > d3 > d7 > fw-4, and every question retrieves
the top 2, d1 then d3.

``MockLLM`` (no ``max_tokens``) answers with the prompt it was given. The QA
template is "Based on [1] and [3]: {query_str}", so each answer cites source 1
(d1, retrieved) and source 3 (never retrieved with top 2).
"""

from __future__ import annotations

from llama_index.core import Document, PromptTemplate, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

from tests.support.frameworks.corpus import PASSAGES

DIM = 4
# Decreasing cosine similarity to the constant query vector (all components equal).
EMBEDDINGS = {
    "fw-1": [1.0, 1.0, 1.0, 1.0],
    "fw-2": [1.0, 1.0, 1.0, 0.0],
    "fw-3": [1.0, 1.0, 0.0, 0.0],
    "fw-4": [1.0, 0.0, 0.0, 0.0],
}
QA_TEMPLATE = PromptTemplate("Based on [1] and [3]: {query_str}")


def build_query_engine(top_k: int = 2):
    return build_index().as_query_engine(similarity_top_k=top_k, text_qa_template=QA_TEMPLATE)


def build_index() -> VectorStoreIndex:
    Settings.llm = MockLLM()
    Settings.embed_model = MockEmbedding(embed_dim=DIM)
    documents = [
        Document(text=text, id_=doc_id, metadata=dict(meta), embedding=EMBEDDINGS[doc_id])
        for doc_id, text, meta in PASSAGES
    ]
    # The Documents are the nodes: no splitter, so node ids are the document ids.
    return VectorStoreIndex(nodes=documents)


def build_citing_engine():
    """A ``CustomQueryEngine`` over the same retriever that names its citations in
    ``Response.metadata["cited"]``: the top node (a node object) and the id "d4"."""
    from llama_index.core.base.response.schema import Response
    from llama_index.core.query_engine import CustomQueryEngine
    from llama_index.core.retrievers import BaseRetriever

    class CitingEngine(CustomQueryEngine):
        retriever: BaseRetriever

        def custom_query(self, query_str: str) -> Response:
            nodes = self.retriever.retrieve(query_str)
            return Response("Paris", nodes, metadata={"cited": [nodes[0], "d4"]})

    retriever = build_query_engine().retriever
    return CitingEngine(retriever=retriever)


def build_split_engine():
    """The usual ingestion: Documents split into nodes (ids "<document id>#<n>"), every
    node retrieved (MockEmbedding scores them all alike), ``MockLLM(max_tokens=3)``."""
    from llama_index.core.node_parser import SentenceSplitter

    Settings.llm = MockLLM(max_tokens=3)
    Settings.embed_model = MockEmbedding(embed_dim=DIM)
    documents = [
        Document(text=text, id_=doc_id, metadata=dict(meta)) for doc_id, text, meta in PASSAGES
    ]
    splitter = SentenceSplitter(id_func=lambda i, doc: f"{doc.doc_id}#{i}")
    index = VectorStoreIndex.from_documents(documents, transformations=[splitter])
    return index.as_query_engine(similarity_top_k=len(documents))


def build_chat_engine(top_k: int = 2):
    """The same index as a context chat engine: each turn retrieves, then the MockLLM
    answers with the whole chat it was given (system context, history, question)."""
    return build_index().as_chat_engine(chat_mode="context", llm=MockLLM(), similarity_top_k=top_k)
