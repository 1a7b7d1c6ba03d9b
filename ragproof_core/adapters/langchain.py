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
``input_key`` is set. In a conversation (CONTRACT section 16) each turn's
earlier turns go in LangChain's chat form, ``HumanMessage``s and ``AIMessage``s:
without ``input_key`` the input is that message list followed by the question as
a ``HumanMessage`` (what a chat model takes); with it, the input is
``{input_key: question, history_key: [messages]}`` (``history_key`` defaults to
``chat_history``, the name a ``MessagesPlaceholder`` usually has).

``use_async`` (default true) calls ``ainvoke``; false calls ``invoke`` on the
runner's threads.

The adapter fills the answer's ``steps`` from the run's tool calls and retrievals
(CONTRACT section 17) with a LangChain callback handler passed in the run's
config: each tool run is a tool step (its name, its input as the arguments, its
output) and each retriever run a retrieve step (its query and documents, mapped
to chunks as the context is), in the order they started, nested runs included;
a run that made none has ``steps: []``. ``steps`` (default: on for a LangChain
``Runnable``, which takes callbacks) turns this off with ``false``, for a chain
that is not an agent, whose answers then carry no trajectory and which the
agent metrics skip (``agent.task_completion`` asks no judge); ``true`` on an
object that is not a ``Runnable`` is a load error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID

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
    json_object,
    marker_citations,
    require,
    wrong_build_error,
)
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.model import Answer, Chunk, RetrieveStep, Step, ToolStep


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
        steps: bool | None = None,
        history_key: str = "chat_history",
    ) -> None:
        super().__init__(factory, citations_key, numbered_citations, id_key, use_async)
        needs = {"package": "langchain-core", "extra": "langchain", "adapter": "LangChainAdapter"}
        require("langchain_core", **needs)
        callbacks = require("langchain_core.callbacks", **needs)
        runnables = require("langchain_core.runnables", **needs)
        if steps is not None and not isinstance(steps, bool):
            raise AdapterLoadError(f"option 'steps' must be true or false, got {steps!r}")
        self.runnable = build_from_factory(factory, factory_options)
        self.retriever = None if retriever is None else build_from_factory(retriever, None)
        for option, path, obj in (
            ("factory", factory, self.runnable),
            ("retriever", retriever, self.retriever),
        ):
            if obj is not None and not callable(getattr(obj, "invoke", None)):
                raise wrong_build_error(option, path, obj, "not a runnable with invoke()")
        # Only a Runnable takes the callbacks that see its runs; an object with a bare
        # invoke() may not even accept a config.
        takes_callbacks = isinstance(self.runnable, runnables.Runnable)
        if steps and not takes_callbacks:
            raise wrong_build_error(
                "factory", factory, self.runnable, "not a Runnable, so steps = true cannot record"
            )
        records = takes_callbacks if steps is None else steps
        self._recorder = step_recorder(callbacks.BaseCallbackHandler) if records else None
        self.input_key = input_key
        self.answer_key = answer_key
        self.context_key = context_key
        self.history_key = history_key
        self._messages = require("langchain_core.messages", **needs)

    def _call(self, question: str, history: History = None) -> Reply:
        recorder = self._new_recorder()
        output = self.runnable.invoke(self._input(question, history), **_config(recorder))
        documents = None if self.retriever is None else self.retriever.invoke(question)
        return self._with_steps(self._reply(output, documents), recorder)

    async def _acall(self, question: str, history: History = None) -> Reply:
        recorder = self._new_recorder()
        run = self.runnable.ainvoke(self._input(question, history), **_config(recorder))
        if self.retriever is None:
            return self._with_steps(self._reply(await run, None), recorder)
        # Independent calls: the case takes as long as the slower one, not both.
        output, documents = await asyncio.gather(run, self.retriever.ainvoke(question))
        return self._with_steps(self._reply(output, documents), recorder)

    def _new_recorder(self) -> Any:
        return None if self._recorder is None else self._recorder()

    def _with_steps(self, reply: Reply, recorder: Any) -> Reply:
        if recorder is None:
            return reply
        steps = recorder.steps(lambda docs: self._chunks(docs, "retriever run"))
        answer = reply.answer
        return Reply(
            Answer(answer.text, answer.retrieved_chunks, answer.citations, steps), reply.retrieved
        )

    def _retrieve(self, question: str, history: History = None) -> tuple[Chunk, ...]:
        # With a retriever of its own, retrieve() need not run the whole chain.
        if self.retriever is None:
            return super()._retrieve(question, history)
        return self._chunks(self.retriever.invoke(question), "retriever output")

    async def _aretrieve(self, question: str, history: History = None) -> tuple[Chunk, ...]:
        if self.retriever is None:
            return await super()._aretrieve(question, history)
        return self._chunks(await self.retriever.ainvoke(question), "retriever output")

    def _input(self, question: str, history: History) -> Any:
        if history is None:
            return question if self.input_key is None else {self.input_key: question}
        messages = [self._message(m["role"], m["content"]) for m in history]
        if self.input_key is None:
            # A chat model (or a chain starting with one) takes the whole conversation.
            return [*messages, self._message("user", question)]
        return {self.input_key: question, self.history_key: messages}

    def _message(self, role: str, content: str) -> Any:
        kind = self._messages.HumanMessage if role == "user" else self._messages.AIMessage
        return kind(content=content)

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


def _config(recorder: Any) -> dict[str, Any]:
    """The run's keyword arguments: none without a recorder (a user's runnable need not
    take ``config``), else a config carrying the recorder as its callback."""
    return {} if recorder is None else {"config": {"callbacks": [recorder]}}


def step_recorder(base: type) -> type:
    """A LangChain callback handler class (subclass of ``base``, LangChain's
    ``BaseCallbackHandler``, given at run time: the extra is optional) recording one
    run's tool and retriever runs, in the order they started."""

    class StepRecorder(base):
        # Called in the run's own order, never from an executor: the steps keep it.
        run_inline = True

        def __init__(self) -> None:
            super().__init__()
            self.started: dict[UUID, int] = {}
            self.raw: list[dict[str, Any]] = []

        def on_tool_start(
            self,
            serialized: dict[str, Any] | None,
            input_str: str,
            *,
            run_id: UUID,
            inputs: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
            self.started[run_id] = len(self.raw)
            self.raw.append(
                {"type": "tool", "name": name, "arguments": tool_arguments(inputs, input_str)}
            )

        def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
            if run_id in self.started:
                self.raw[self.started[run_id]]["output"] = _output_text(output)

        def on_retriever_start(
            self, serialized: dict[str, Any] | None, query: str, *, run_id: UUID, **kwargs: Any
        ) -> None:
            self.started[run_id] = len(self.raw)
            self.raw.append({"type": "retrieve", "query": query, "documents": []})

        def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
            if run_id in self.started:
                self.raw[self.started[run_id]]["documents"] = list(documents)

        def steps(self, chunks: Any) -> tuple[Step, ...]:
            out: list[Step] = []
            for raw in self.raw:
                if raw["type"] == "tool":
                    out.append(ToolStep(raw["name"], raw["arguments"], raw.get("output")))
                else:
                    out.append(RetrieveStep(raw["query"], chunks(raw["documents"])))
            return tuple(out)

    return StepRecorder


def tool_arguments(inputs: Mapping[str, Any] | None, input_str: str) -> dict[str, Any]:
    """A tool run's arguments as a JSON object: the structured input when LangChain passes
    one, else the input string parsed as a JSON object, else ``{"input": input_str}``."""
    if isinstance(inputs, Mapping):
        return json_object(inputs)
    try:
        parsed = json.loads(input_str)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"input": input_str}


def _output_text(output: Any) -> str:
    content = getattr(output, "content", output)
    return content if isinstance(content, str) else json.dumps(content, default=str)


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
