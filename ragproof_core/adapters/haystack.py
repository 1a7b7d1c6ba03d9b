"""Evaluate a Haystack pipeline (extra ``ragproof[haystack]``; Haystack 2.x and 3.x).

``factory`` (``module:callable``) builds the user's ``Pipeline`` (or Haystack
2.x ``AsyncPipeline``). Per case the pipeline runs once:

- ``inputs``: the sockets that receive the question, as a list of
  ``"component.input"`` strings or a table ``{component = "input"}`` (a list of
  inputs per component allowed). Default: every pipeline input named ``query``
  or ``question`` (a retriever's ``query`` and a prompt builder's ``question``
  in the usual RAG pipeline).
- ``answer_output``: the ``"component.output"`` holding the answer: ``answers``
  (``GeneratedAnswer``s) or ``replies`` (``ChatMessage``s or strings); the first
  one is the answer. Default: the one output named ``answers``, else the one
  named ``replies``.
- ``documents_output``: the ``"component.output"`` holding the retrieved
  ``Document``s. Default: the one output named ``documents`` (a retriever's),
  else the documents of a ``GeneratedAnswer``. No documents: retrieval is not
  exposed and retrieval metrics skip. Two components with an output of the
  same name are ambiguous: an error names them and the option to set.
- citations: ids (or documents) under ``citations_key`` in the answer's
  ``meta``; else the documents an ``AnswerBuilder`` with ``reference_pattern``
  marked ``referenced``; else, with ``numbered_citations = true``, the ``[n]``
  markers in the text (the n-th retrieved document).

- ``history_inputs`` (same forms as ``inputs``): the inputs given a
  conversation's earlier turns (CONTRACT section 16) as a list of Haystack
  ``ChatMessage``s (``from_user``/``from_assistant``), the current question
  not included. Default: every open input named ``history`` or
  ``chat_history`` (a ``ChatPromptBuilder`` template variable, say). A
  conversation run on a pipeline with none fails every turn, naming the option.

Chunk ids come from ``Document.meta[id_key]``, else ``Document.id``.

``use_async`` (default: when the pipeline has ``run_async``) awaits
``run_async``; otherwise ``run`` runs on the runner's threads.

Haystack sends anonymous usage telemetry unless ``HAYSTACK_TELEMETRY_ENABLED``
is false; an evaluation run should not phone home, so this module sets it to
``False`` when the user has not set it either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
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
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.model import Answer, Chunk

_QUESTION_SOCKETS = ("query", "question")
_ANSWER_OUTPUTS = ("answers", "replies")
_HISTORY_SOCKETS = ("history", "chat_history")


class HaystackAdapter(FrameworkAdapter):
    """A Haystack pipeline under test; options as in the module docstring."""

    def __init__(
        self,
        factory: str,
        factory_options: Mapping[str, Any] | None = None,
        inputs: Sequence[str] | Mapping[str, str | Sequence[str]] | None = None,
        answer_output: str | None = None,
        documents_output: str | None = None,
        citations_key: str = DEFAULT_CITATIONS_KEY,
        numbered_citations: bool = False,
        id_key: str | None = DEFAULT_ID_KEY,
        use_async: bool | None = None,
        history_inputs: Sequence[str] | Mapping[str, str | Sequence[str]] | None = None,
    ) -> None:
        os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
        needs = {"package": "haystack-ai", "extra": "haystack", "adapter": "HaystackAdapter"}
        require("haystack", **needs)
        self._chat_message = require("haystack.dataclasses", **needs).ChatMessage
        self.pipeline = build_from_factory(factory, factory_options)
        if not callable(getattr(self.pipeline, "run", None)) or not hasattr(
            self.pipeline, "inputs"
        ):
            raise wrong_build_error("factory", factory, self.pipeline, "not a Haystack Pipeline")
        has_async = callable(getattr(self.pipeline, "run_async", None))
        if use_async is None:
            use_async = has_async
        elif use_async and not has_async:
            raise AdapterLoadError(
                f"use_async = true, but the {type(self.pipeline).__name__} built by {factory!r} "
                "has no run_async() (Haystack 2.x: build an AsyncPipeline)"
            )
        super().__init__(factory, citations_key, numbered_citations, id_key, use_async)
        self.inputs = _question_sockets(self.pipeline.inputs(), inputs)
        self.history_inputs = _history_sockets(self.pipeline.inputs(), history_inputs)
        self.answer_output = _path(answer_output, "answer_output")
        self.documents_output = _path(documents_output, "documents_output")
        # Intermediate outputs (the retriever's documents feeding a prompt builder)
        # are only returned for the components named here.
        self._include = set(self.pipeline.graph.nodes)

    def _call(self, question: str, history: History = None) -> Reply:
        data = self._data(question, history)
        return self._reply(self.pipeline.run(data, include_outputs_from=self._include))

    async def _acall(self, question: str, history: History = None) -> Reply:
        data = self._data(question, history)
        return self._reply(await self.pipeline.run_async(data, include_outputs_from=self._include))

    def _data(self, question: str, history: History) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = {}
        for component, socket in self.inputs:
            data.setdefault(component, {})[socket] = question
        if history is not None:
            if not self.history_inputs:
                raise AdapterOutputError(
                    "a conversation needs a pipeline input for the earlier turns: none is "
                    "named 'history' or 'chat_history'; set option history_inputs"
                )
            for component, socket in self.history_inputs:
                # A fresh list per input: a component may append to the one it gets.
                data.setdefault(component, {})[socket] = self._messages(history)
        return data

    def _messages(self, history: list[dict[str, str]]) -> list[Any]:
        return [
            self._chat_message.from_user(m["content"])
            if m["role"] == "user"
            else self._chat_message.from_assistant(m["content"])
            for m in history
        ]

    def _reply(self, result: Mapping[str, Any]) -> Reply:
        # "answers" (an AnswerBuilder) sits downstream of the generator's "replies".
        answers = _output(result, self.answer_output, _ANSWER_OUTPUTS, "answer_output")
        if answers is None:
            raise AdapterOutputError("the pipeline returned no replies or answers")
        if not isinstance(answers, list) or not answers:
            raise AdapterOutputError(
                f"the pipeline's answer output is {type(answers).__name__}, not a non-empty list"
            )
        first = answers[0]
        text, meta = _answer_text_and_meta(first)
        # A GeneratedAnswer's own documents come last: with reference_pattern they
        # may be only the cited ones, not what was retrieved.
        answer_documents = getattr(first, "documents", None)
        documents = _output(
            result, self.documents_output, ("documents",), "documents_output", answer_documents
        )
        chunks = None if documents is None else self._chunks(documents)
        citations = None
        if isinstance(meta, Mapping) and meta.get(self.citations_key) is not None:
            citations = cited_ids(
                meta[self.citations_key], self._chunk, f"answer meta {self.citations_key!r}"
            )
        elif (referenced := _referenced(answer_documents)) is not None:
            citations = tuple(self._chunk(doc).id for doc in referenced)
        elif self.numbered_citations and chunks is not None:
            citations = marker_citations(text, chunks)
        return Reply(Answer(text, chunks, citations), chunks)

    def _chunks(self, documents: Any) -> tuple[Chunk, ...]:
        if not isinstance(documents, list | tuple):
            raise AdapterOutputError(
                f"the pipeline's documents output is {type(documents).__name__}, not a list"
            )
        return tuple(self._chunk(doc) for doc in documents)

    def _chunk(self, doc: Any) -> Chunk:
        if not hasattr(doc, "content") or not hasattr(doc, "meta"):
            raise AdapterOutputError(f"expected a Haystack Document, got {type(doc).__name__}")
        return chunk_from(doc.content, doc.meta, doc.id, doc.score, self.id_key)


def _path(value: str | None, option: str) -> tuple[str, str] | None:
    if value is None:
        return None
    component, sep, socket = str(value).partition(".")
    if not sep or not component or not socket:
        raise AdapterLoadError(f"option {option!r} must look like 'component.name', got {value!r}")
    return component, socket


def _question_sockets(
    pipeline_inputs: Mapping[str, Mapping[str, Any]], configured: Sequence[str] | None
) -> tuple[tuple[str, str], ...]:
    """The (component, socket) pairs fed the question, checked against the pipeline."""
    if configured is None:
        found = tuple(
            (component, socket)
            for component, sockets in pipeline_inputs.items()
            for socket in sockets
            if socket in _QUESTION_SOCKETS
        )
        if not found:
            raise AdapterLoadError(
                "the pipeline has no input named 'query' or 'question'; set option inputs, "
                f'e.g. inputs = ["retriever.query"] (inputs: {_describe(pipeline_inputs)})'
            )
        return found
    if isinstance(configured, Mapping):
        pairs = _pairs_from_table(configured)
    elif isinstance(configured, str) or not isinstance(configured, Sequence):
        raise AdapterLoadError(
            "option 'inputs' must be a list of 'component.input' strings "
            "or a table of component = input name(s)"
        )
    else:
        pairs = tuple(_path(item, "inputs") for item in configured)
    for component, socket in pairs:
        if socket not in pipeline_inputs.get(component, {}):
            raise AdapterLoadError(
                f"option 'inputs': the pipeline has no open input {component}.{socket} "
                f"(inputs: {_describe(pipeline_inputs)})"
            )
    return pairs


def _history_sockets(
    pipeline_inputs: Mapping[str, Mapping[str, Any]], configured: Sequence[str] | None
) -> tuple[tuple[str, str], ...]:
    """The (component, socket) pairs fed a conversation's earlier turns; none is fine
    until a conversation is run."""
    if configured is not None:
        return _question_sockets(pipeline_inputs, configured)
    return tuple(
        (component, socket)
        for component, sockets in pipeline_inputs.items()
        for socket in sockets
        if socket in _HISTORY_SOCKETS
    )


def _pairs_from_table(table: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``{retriever = "query", prompt_builder = ["question", "query"]}`` as (component, input)."""
    pairs = []
    for component, sockets in table.items():
        names = [sockets] if isinstance(sockets, str) else sockets
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise AdapterLoadError(
                f"option 'inputs': {component} must name an input or a list of inputs"
            )
        pairs.extend((str(component), name) for name in names)
    return tuple(pairs)


def _describe(pipeline_inputs: Mapping[str, Mapping[str, Any]]) -> str:
    names = [f"{c}.{s}" for c, sockets in pipeline_inputs.items() for s in sockets]
    return ", ".join(names) or "none"


def _output(
    result: Mapping[str, Any],
    path: tuple[str, str] | None,
    names: tuple[str, ...],
    option: str,
    fallback: Any = None,
) -> Any:
    """The configured output; else the one output called ``names[0]``, else ``names[1]``...;
    else ``fallback``. Two components with the same output name are ambiguous."""
    if path is not None:
        component, socket = path
        if socket not in result.get(component, {}):
            raise AdapterOutputError(
                f"option {option!r}: the pipeline returned no {component}.{socket}"
            )
        return result[component][socket]
    for name in names:
        found = [
            component
            for component, outputs in result.items()
            if isinstance(outputs, Mapping) and name in outputs
        ]
        if len(found) > 1:
            where = ", ".join(f"{component}.{name}" for component in found)
            raise AdapterOutputError(
                f"several pipeline outputs could be meant ({where}); set option {option}"
            )
        if found:
            return result[found[0]][name]
    return fallback


def _referenced(documents: Any) -> list[Any] | None:
    """Documents an ``AnswerBuilder`` with ``reference_pattern`` marked as cited, or None."""
    if not isinstance(documents, list) or not any(
        "referenced" in (getattr(doc, "meta", None) or {}) for doc in documents
    ):
        return None
    return [doc for doc in documents if doc.meta.get("referenced") is True]


def _answer_text_and_meta(answer: Any) -> tuple[str, Any]:
    """Text and meta of a ``ChatMessage``, a ``GeneratedAnswer`` or a plain string reply."""
    if isinstance(answer, str):
        return answer, None
    if hasattr(answer, "data") and hasattr(answer, "documents"):  # GeneratedAnswer
        return str(answer.data or ""), answer.meta
    text = getattr(answer, "text", None)
    if text is None and hasattr(answer, "content"):  # ChatMessage before Haystack 2.9
        text = answer.content
    if text is None and hasattr(answer, "meta"):
        text = ""  # a reply with tool calls only
    if not isinstance(text, str):
        raise AdapterOutputError(
            f"expected replies as ChatMessages or strings, got {type(answer).__name__}"
        )
    return text, answer.meta
