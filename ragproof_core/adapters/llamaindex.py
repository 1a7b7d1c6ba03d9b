"""Evaluate a LlamaIndex query engine (extra ``ragproof[llamaindex]``).

``factory`` (``module:callable``) builds the user's query engine (anything with
``query``/``aquery`` returning a ``Response``). ``Response.response`` is the
answer text; ``source_nodes`` are the retrieval under test and the answer's
context, one chunk per node: id from ``node.metadata[id_key]`` or else the node
id, the node's score, its metadata plus ``document_id`` (the node's source
document, for ``source_match = "document"``) when the metadata has none.

Citations: a list of ids (or nodes) under ``Response.metadata[citations_key]``,
or, with ``numbered_citations = true``, the ``[n]`` markers in the answer text
citing the n-th source node (the style of LlamaIndex's ``CitationQueryEngine``).

A chat engine (anything with ``chat``/``achat`` returning an
``AgentChatResponse``, e.g. ``index.as_chat_engine()``) is evaluated the same
way; conversations (CONTRACT section 16) need one: each turn calls
``chat(question, chat_history=[ChatMessage, ...])`` with the earlier turns,
which replaces the engine's own memory. A query engine fails every turn of a
conversation, saying so.

``use_async`` (default true) calls ``aquery``/``achat``; false calls
``query``/``chat`` on the runner's threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragproof_core.adapters.coerce import AdapterOutputError
from ragproof_core.adapters.framework import (
    DEFAULT_CITATIONS_KEY,
    DEFAULT_ID_KEY,
    FrameworkAdapter,
    History,
    Reply,
    build_from_factory,
    chunk_from,
    cited_ids,
    marker_citations,
    require,
    wrong_build_error,
)
from ragproof_core.model import Answer, Chunk


class LlamaIndexAdapter(FrameworkAdapter):
    """A LlamaIndex query engine under test; options as in the module docstring."""

    def __init__(
        self,
        factory: str,
        factory_options: Mapping[str, Any] | None = None,
        citations_key: str = DEFAULT_CITATIONS_KEY,
        numbered_citations: bool = False,
        id_key: str | None = DEFAULT_ID_KEY,
        use_async: bool = True,
    ) -> None:
        super().__init__(factory, citations_key, numbered_citations, id_key, use_async)
        schema = require(
            "llama_index.core.schema",
            package="llama-index-core",
            extra="llamaindex",
            adapter="LlamaIndexAdapter",
        )
        self._text_only = schema.MetadataMode.NONE
        self._chat_message = require(
            "llama_index.core.base.llms.types",
            package="llama-index-core",
            extra="llamaindex",
            adapter="LlamaIndexAdapter",
        ).ChatMessage
        self.engine = build_from_factory(factory, factory_options)
        self._chats = callable(getattr(self.engine, "chat", None))
        if not self._chats and not callable(getattr(self.engine, "query", None)):
            raise wrong_build_error(
                "factory", factory, self.engine, "not a query engine with query()"
            )

    def _call(self, question: str, history: History = None) -> Reply:
        if self._uses_chat(history):
            return self._reply(self.engine.chat(question, chat_history=self._chat(history)))
        return self._reply(self.engine.query(question))

    async def _acall(self, question: str, history: History = None) -> Reply:
        if self._uses_chat(history):
            chat_history = self._chat(history)
            return self._reply(await self.engine.achat(question, chat_history=chat_history))
        return self._reply(await self.engine.aquery(question))

    def _uses_chat(self, history: History) -> bool:
        if history is None:
            return not callable(getattr(self.engine, "query", None))
        if not self._chats:
            raise AdapterOutputError(
                f"a conversation needs a chat engine with chat(chat_history=...); "
                f"the factory built a {type(self.engine).__name__}"
            )
        return True

    def _chat(self, history: History) -> list[Any]:
        # An explicit chat_history replaces the engine's memory, so no turn sees
        # another conversation's messages.
        return [self._chat_message(role=m["role"], content=m["content"]) for m in history or ()]

    def _reply(self, response: Any) -> Reply:
        if not hasattr(response, "source_nodes"):
            raise AdapterOutputError(
                f"expected a LlamaIndex Response, got {type(response).__name__}"
            )
        text = response.response
        text = "" if text is None else text if isinstance(text, str) else str(text)
        chunks = tuple(self._chunk(node) for node in response.source_nodes or ())
        citations = None
        metadata = response.metadata
        if isinstance(metadata, Mapping) and metadata.get(self.citations_key) is not None:
            citations = cited_ids(
                metadata[self.citations_key],
                self._chunk,
                f"Response.metadata[{self.citations_key!r}]",
            )
        elif self.numbered_citations:
            citations = marker_citations(text, chunks)
        return Reply(Answer(text, chunks, citations), chunks)

    def _chunk(self, node_with_score: Any) -> Chunk:
        node = getattr(node_with_score, "node", node_with_score)
        if not hasattr(node, "node_id"):
            raise AdapterOutputError(f"expected a LlamaIndex node, got {type(node).__name__}")
        metadata = dict(node.metadata or {})
        if node.ref_doc_id is not None:
            metadata.setdefault("document_id", node.ref_doc_id)
        return chunk_from(
            node.get_content(metadata_mode=self._text_only),
            metadata,
            node.node_id,
            getattr(node_with_score, "score", None),
            self.id_key,
        )
