"""Evaluate a LangChain runnable or chain (extra ``ragproof[langchain]``).

``factory`` (``module:callable``) builds the user's runnable. Its output may be:

- a string, or a message (``AIMessage``): the answer text only;
- a dict: the answer under ``answer_key`` (a string or message), the documents
  used under ``context_key`` (``Document``s, or ``(Document, score)`` pairs as
  ``similarity_search_with_score`` returns), cited ids or documents under
  ``citations_key``; the usual LCEL "RAG with sources" shape.

``retriever`` (another ``module:callable``) may build a separate retriever
runnable (``invoke(question) -> list[Document]``); its documents are then the
retrieval under test. Otherwise the chain's ``context`` is. With neither,
retrieval is not exposed and retrieval metrics skip.

The runnable gets the question as its input, or ``{input_key: question}`` when
``input_key`` is set. ``use_async`` (default true) calls ``ainvoke``; false calls
``invoke`` on the runner's threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ragproof_core.adapters.coerce import AdapterOutputError
from ragproof_core.adapters.framework import (
    DEFAULT_CITATIONS_KEY,
    DEFAULT_ID_KEY,
    FrameworkAdapter,
    Reply,
    build_from_factory,
    chunk_from,
    cited_ids,
    marker_citations,
    require,
    wrong_build_error,
)
from ragproof_core.model import Answer, Chunk


class LangChainAdapter(FrameworkAdapter):
    """A LangChain runnable under test; options as in the module docstring."""

    def __init__(
        self,
        factory: str,
        factory_options: Mapping[str, Any] | None = None,
        retriever: str | None = None,
        input_key: str | None = None,
        answer_key: str = "answer",
        context_key: str = "context",
        citations_key: str = DEFAULT_CITATIONS_KEY,
        numbered_citations: bool = False,
        id_key: str | None = DEFAULT_ID_KEY,
        use_async: bool = True,
    ) -> None:
        super().__init__(factory, citations_key, numbered_citations, id_key, use_async)
        require(
            "langchain_core",
            package="langchain-core",
            extra="langchain",
            adapter="LangChainAdapter",
        )
        self.runnable = build_from_factory(factory, factory_options)
        self.retriever = None if retriever is None else build_from_factory(retriever, None)
        for option, path, obj in (
            ("factory", factory, self.runnable),
            ("retriever", retriever, self.retriever),
        ):
            if obj is not None and not callable(getattr(obj, "invoke", None)):
                raise wrong_build_error(option, path, obj, "not a runnable with invoke()")
        self.input_key = input_key
        self.answer_key = answer_key
        self.context_key = context_key

    def _call(self, question: str) -> Reply:
        output = self.runnable.invoke(self._input(question))
        documents = None if self.retriever is None else self.retriever.invoke(question)
        return self._reply(output, documents)

    async def _acall(self, question: str) -> Reply:
        if self.retriever is None:
            return self._reply(await self.runnable.ainvoke(self._input(question)), None)
        # Independent calls: the case takes as long as the slower one, not both.
        output, documents = await asyncio.gather(
            self.runnable.ainvoke(self._input(question)), self.retriever.ainvoke(question)
        )
        return self._reply(output, documents)

    def _retrieve(self, question: str) -> tuple[Chunk, ...]:
        # With a retriever of its own, retrieve() need not run the whole chain.
        if self.retriever is None:
            return super()._retrieve(question)
        return self._chunks(self.retriever.invoke(question), "retriever output")

    async def _aretrieve(self, question: str) -> tuple[Chunk, ...]:
        if self.retriever is None:
            return await super()._aretrieve(question)
        return self._chunks(await self.retriever.ainvoke(question), "retriever output")

    def _input(self, question: str) -> Any:
        return question if self.input_key is None else {self.input_key: question}

    def _reply(self, output: Any, retriever_documents: Any) -> Reply:
        citations: tuple[str, ...] | None = None
        context: tuple[Chunk, ...] | None = None
        if isinstance(output, Mapping):
            if self.answer_key not in output:
                raise AdapterOutputError(
                    f"chain output has no {self.answer_key!r} key "
                    f"(keys: {sorted(map(str, output))}); set option answer_key"
                )
            text = _text(output[self.answer_key])
            if output.get(self.context_key) is not None:
                where = f"chain output {self.context_key!r}"
                context = self._chunks(output[self.context_key], where)
            if output.get(self.citations_key) is not None:
                citations = cited_ids(
                    output[self.citations_key], self._chunk, f"chain output {self.citations_key!r}"
                )
        else:
            text = _text(output)
        retrieved = context
        if retriever_documents is not None:
            retrieved = self._chunks(retriever_documents, "retriever output")
        if citations is None and self.numbered_citations and retrieved is not None:
            citations = marker_citations(text, context if context is not None else retrieved)
        return Reply(
            Answer(text, context if context is not None else retrieved, citations), retrieved
        )

    def _chunks(self, documents: Any, where: str) -> tuple[Chunk, ...]:
        if isinstance(documents, str | bytes | Mapping) or not isinstance(documents, list | tuple):
            raise AdapterOutputError(
                f"{where} must be a list of documents, got {type(documents).__name__}"
            )
        return tuple(self._chunk(doc) for doc in documents)

    def _chunk(self, doc: Any) -> Chunk:
        score = None
        if isinstance(doc, tuple) and len(doc) == 2:  # (Document, score)
            doc, score = doc
        if not hasattr(doc, "page_content"):
            raise AdapterOutputError(f"expected a LangChain Document, got {type(doc).__name__}")
        return chunk_from(
            doc.page_content, doc.metadata, getattr(doc, "id", None), score, self.id_key
        )


def _text(value: Any) -> str:
    """The answer text of a string or a message (``content`` a string or content blocks)."""
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Content blocks: keep the text ones (tool calls and images are not the answer).
        return "".join(
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str) or _is_text_block(block)
        )
    raise AdapterOutputError(
        f"expected the answer as a string or a message, got {type(value).__name__}"
    )


def _is_text_block(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "text"
