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

An agent (a LlamaIndex workflow, e.g. ``FunctionAgent``, ``ReActAgent`` or an
``AgentWorkflow``) is run with ``run(user_msg=question)`` (``chat_history=[...]``
in a conversation) and its answer is the final ``AgentOutput``'s text. Its
trajectory (CONTRACT section 17) becomes the answer's ``steps``, read from the
run's own event stream, where the agent reports each tool call as it starts
(``ToolCall``) and ends (``ToolCallResult``), in the order the calls started:

- a call whose tool returned nodes (a ``RetrieverTool``, or any tool returning
  ``NodeWithScore``s) or a ``Response`` with source nodes (a
  ``QueryEngineTool``) is a retrieve step: its chunks are those nodes, mapped as
  source nodes are; its query is the call's only argument as the agent wrote it
  (a ``RetrieverTool``'s ``input``), else the query string the tool searched with;
- any other call is a tool step: the tool's name, its arguments, its output text.

The chunks of all retrieve steps (each id once, in order) are the answer's
context; an agent exposes no single retrieval under test, so the retrieval
metrics skip and the per-hop metrics score it.

``use_async`` (default true) calls ``aquery``/``achat``; false calls
``query``/``chat`` on the runner's threads (an agent, which LlamaIndex runs
only asynchronously, on an event loop of that thread).
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
from ragproof_core.model import Answer, Chunk, RetrieveStep, Step, ToolStep


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
        self._node_with_score = schema.NodeWithScore
        self._chat_message = require(
            "llama_index.core.base.llms.types",
            package="llama-index-core",
            extra="llamaindex",
            adapter="LlamaIndexAdapter",
        ).ChatMessage
        self._agent_events = require(
            "llama_index.core.agent.workflow",
            package="llama-index-core",
            extra="llamaindex",
            adapter="LlamaIndexAdapter",
        )
        workflow = require(
            "llama_index.core.workflow",
            package="llama-index-core",
            extra="llamaindex",
            adapter="LlamaIndexAdapter",
        )
        self.engine = build_from_factory(factory, factory_options)
        self._is_agent = isinstance(self.engine, workflow.Workflow)
        self._chats = callable(getattr(self.engine, "chat", None))
        if (
            not self._is_agent
            and not self._chats
            and not callable(getattr(self.engine, "query", None))
        ):
            raise wrong_build_error(
                "factory", factory, self.engine, "not a query engine with query()"
            )

    def _call(self, question: str, history: History = None) -> Reply:
        if self._is_agent:
            # LlamaIndex runs agents only on an event loop: this runner thread gets its own.
            return asyncio.run(self._run_agent(question, history))
        if self._uses_chat(history):
            return self._reply(self.engine.chat(question, chat_history=self._chat(history)))
        return self._reply(self.engine.query(question))

    async def _acall(self, question: str, history: History = None) -> Reply:
        if self._is_agent:
            return await self._run_agent(question, history)
        if self._uses_chat(history):
            chat_history = self._chat(history)
            return self._reply(await self.engine.achat(question, chat_history=chat_history))
        return self._reply(await self.engine.aquery(question))

    async def _run_agent(self, question: str, history: History) -> Reply:
        chat_history = None if history is None else self._chat(history)
        handler = self.engine.run(user_msg=question, chat_history=chat_history)
        # Calls in the order they started; results fill them in as they end, which
        # for parallel calls may be another order.
        calls: dict[str, Any] = {}
        results: dict[str, Any] = {}
        async for event in handler.stream_events():
            if isinstance(event, self._agent_events.ToolCallResult):
                calls.setdefault(event.tool_id, event)
                results[event.tool_id] = event.tool_output
            elif isinstance(event, self._agent_events.ToolCall):
                calls.setdefault(event.tool_id, event)
        result = await handler
        steps = tuple(
            self._step(call.tool_name, call.tool_kwargs, results.get(tool_id))
            for tool_id, call in calls.items()
        )
        context: dict[str, Chunk] = {}
        for step in steps:
            if isinstance(step, RetrieveStep):
                for chunk in step.chunks:
                    context.setdefault(chunk.id, chunk)
        answer = Answer(_agent_text(result), tuple(context.values()), None, steps)
        return Reply(answer, None)

    def _step(self, name: str, arguments: Mapping[str, Any], output: Any) -> Step:
        """One agent tool call as a step (module docstring); ``output`` is the call's
        ``ToolOutput``, or None for a call that never ended."""
        nodes = self._retrieved_nodes(output)
        if nodes is not None:
            return RetrieveStep(
                _query(arguments, output.raw_input), tuple(self._chunk(n) for n in nodes)
            )
        return ToolStep(name, json_object(arguments), None if output is None else output.content)

    def _retrieved_nodes(self, output: Any) -> list[Any] | None:
        """The nodes a retrieving call got (possibly none), or None for another call."""
        raw = getattr(output, "raw_output", None)
        if isinstance(raw, list):
            if raw and all(isinstance(n, self._node_with_score) for n in raw):
                return raw
            # An empty list is a retrieval that found nothing when a retriever tool (raw
            # input {"input": query}) returned it, not a function tool ({"args", "kwargs"}).
            raw_input = output.raw_input
            searched = isinstance(raw_input, Mapping) and set(raw_input) == {"input"}
            return raw if not raw and searched else None
        # A QueryEngineTool's Response: the nodes it retrieved are its sources.
        sources = getattr(raw, "source_nodes", None)
        return list(sources) if isinstance(sources, list) else None

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


def _query(arguments: Mapping[str, Any], raw_input: Any) -> str:
    """A retrieve step's query: the call's only argument as the agent wrote it, else the
    query string the tool searched with (a ``RetrieverTool`` sends ``"input is ..."``)."""
    if len(arguments) == 1:
        (value,) = arguments.values()
        return value if isinstance(value, str) else str(value)
    searched = raw_input.get("input") if isinstance(raw_input, Mapping) else None
    return searched.strip() if isinstance(searched, str) else str(dict(arguments))


def _agent_text(result: Any) -> str:
    """The answer of an agent run: its final ``AgentOutput``'s message text."""
    if isinstance(result, str):
        return result
    message = getattr(result, "response", None)
    if message is None or not hasattr(message, "content"):
        raise AdapterOutputError(f"expected an agent's AgentOutput, got {type(result).__name__}")
    return message.content or ""
