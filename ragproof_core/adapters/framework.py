"""What the LangChain, LlamaIndex and Haystack adapters share (docs/adapters.md).

Each framework adapter is built from a user ``factory`` (``module:callable``,
imported like an adapter target) that returns the user's own runnable, query
engine or pipeline. One call of that object per case gives both the answer and
the documents it used, so the adapters implement the runner's ``run_case``
hook: the pipeline runs once per case, and its documents become both the
retrieval under test (``CaseOutput.retrieved``) and the answer's context.

Frameworks are imported lazily by each adapter module (``require``), so
``ragproof_core`` imports without the extras; a missing one is reported with
the ``pip install 'ragproof[EXTRA]'`` line that fixes it.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ragproof_core.adapters.coerce import AdapterOutputError
from ragproof_core.adapters.loading import AdapterLoadError, resolve_target
from ragproof_core.model import Answer, Case, CaseOutput, Chunk

DEFAULT_ID_KEY = "source_id"

# A conversation turn's earlier messages (``adapters.history``): a list of
# {"role", "content"} dicts for a turn (empty for the first), None for a single case.
History = list[dict[str, str]] | None
DEFAULT_CITATIONS_KEY = "citations"

# "[1]", "[2, 3]" or "[1][3]": the numbered style LlamaIndex's CitationQueryEngine
# prompts for, where [n] is the n-th source (1-based).
_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def require(module: str, *, package: str, extra: str, adapter: str) -> ModuleType:
    """Import a framework module, or say which ragproof extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise AdapterLoadError(
            f"{adapter} needs {package}, which is not installed ({exc}); "
            f"install it with: pip install 'ragproof[{extra}]'"
        ) from None


def build_from_factory(factory: str, factory_options: Mapping[str, Any] | None) -> Any:
    """Import ``factory`` (``module:callable``) and call it with ``factory_options``."""
    if not isinstance(factory, str):
        raise AdapterLoadError(
            f"option 'factory' must be a 'module:callable' string, got {factory!r}"
        )
    if factory_options is not None and not isinstance(factory_options, Mapping):
        raise AdapterLoadError("option 'factory_options' must be a table of keyword arguments")
    build = resolve_target(factory, "factory")
    try:
        built = build(**dict(factory_options or {}))
    except Exception as exc:
        raise AdapterLoadError(f"factory {factory!r} failed: {type(exc).__name__}: {exc}") from exc
    if built is None:
        raise AdapterLoadError(f"factory {factory!r} returned None")
    return built


def wrong_build_error(
    option: str, target: str | None, built: Any, expected: str
) -> AdapterLoadError:
    """The error for a factory that built something of the wrong kind."""
    return AdapterLoadError(f"{option} {target!r} returned a {type(built).__name__!r}, {expected}")


def chunk_from(text: Any, metadata: Any, own_id: Any, score: Any, id_key: str | None) -> Chunk:
    """One framework document as a ``Chunk``.

    The id is ``metadata[id_key]`` when present (the user's source ids, which the
    dataset's ``expected_source_ids`` name), else the framework's own document or
    node id. Metadata is kept, made JSON-safe: the store writes it as JSON text
    and frameworks put datetimes and the like there.
    """
    meta = dict(metadata) if isinstance(metadata, Mapping) else {}
    chunk_id = meta.get(id_key) if id_key else None
    if chunk_id is None:
        chunk_id = own_id
    if isinstance(chunk_id, int) and not isinstance(chunk_id, bool):
        chunk_id = str(chunk_id)
    if not isinstance(chunk_id, str) or not chunk_id:
        raise AdapterOutputError(
            f"document has no id: metadata key {id_key!r} is missing and the framework "
            f"gave no id of its own ({_short(text)!r})"
        )
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise AdapterOutputError(f"document {chunk_id!r} text is a {type(text).__name__}")
    if isinstance(score, bool) or not isinstance(score, int | float):
        score = None
    return Chunk(
        id=chunk_id,
        text=text,
        score=None if score is None else float(score),
        metadata=_json_safe(meta),
    )


def cited_ids(items: Any, to_chunk: Callable[[Any], Chunk], where: str) -> tuple[str, ...]:
    """Citations a pipeline returned: chunk id strings, or documents mapped like chunks."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise AdapterOutputError(f"{where} must be a list of ids or documents, got {_type(items)}")
    return tuple(item if isinstance(item, str) else to_chunk(item).id for item in items)


def marker_citations(text: str, chunks: tuple[Chunk, ...]) -> tuple[str, ...]:
    """Numbered markers in ``text`` as chunk ids: ``[n]`` cites the n-th chunk (1-based).

    A number with no such chunk stays as its marker (``"[7]"``), so citation
    validity counts it as a citation of something never retrieved. Each id once,
    in order of first mention.
    """
    cited: dict[str, None] = {}
    for group in _MARKER.findall(text):
        for number in (int(n) for n in group.split(",")):
            cited[chunks[number - 1].id if 1 <= number <= len(chunks) else f"[{number}]"] = None
    return tuple(cited)


@dataclass(frozen=True, slots=True)
class Reply:
    """One pipeline call, mapped: the answer and the retrieval under test (None: not exposed)."""

    answer: Answer
    retrieved: tuple[Chunk, ...] | None


class FrameworkAdapter:
    """Base of the framework adapters: sync or async calls, one pipeline run per case.

    Subclasses implement ``_call(question, history)`` and ``_acall(question,
    history)``, both returning a ``Reply``; each passes a conversation's
    ``history`` in its framework's own chat form. The runner awaits async
    methods and runs sync ones on its daemon threads, deciding by inspecting
    the bound method, so the methods it sees (``run_case``, ``answer``,
    ``retrieve``) are picked once here.

    The options every framework adapter takes (``factory``, ``citations_key``,
    ``numbered_citations``, ``id_key``, ``use_async``) are kept here under their
    own names; ``repr`` names the factory.
    """

    def __init__(
        self,
        factory: str,
        citations_key: str,
        numbered_citations: bool,
        id_key: str | None,
        use_async: bool,
    ) -> None:
        if not isinstance(use_async, bool):
            raise AdapterLoadError(f"option 'use_async' must be true or false, got {use_async!r}")
        self.use_async = use_async
        self.factory = factory
        self.citations_key = citations_key
        self.numbered_citations = numbered_citations
        self.id_key = id_key
        if use_async:
            self.run_case, self.answer, self.retrieve = (
                self._arun_case,
                self._aanswer,
                self._aretrieve,
            )
        else:
            self.run_case, self.answer, self.retrieve = (
                self._run_case,
                self._answer,
                self._retrieve,
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(factory={self.factory!r})"

    def _call(self, question: str, history: History = None) -> Reply:
        raise NotImplementedError

    async def _acall(self, question: str, history: History = None) -> Reply:
        raise NotImplementedError

    def _run_case(self, case: Case, history: History = None) -> CaseOutput:
        reply = self._call(case.question, history)
        return CaseOutput(case.id, answer=reply.answer, retrieved=reply.retrieved)

    async def _arun_case(self, case: Case, history: History = None) -> CaseOutput:
        reply = await self._acall(case.question, history)
        return CaseOutput(case.id, answer=reply.answer, retrieved=reply.retrieved)

    def _answer(self, question: str, history: History = None) -> Answer:
        return self._call(question, history).answer

    async def _aanswer(self, question: str, history: History = None) -> Answer:
        return (await self._acall(question, history)).answer

    def _retrieve(self, question: str, history: History = None) -> tuple[Chunk, ...]:
        return _exposed(self._call(question, history))

    async def _aretrieve(self, question: str, history: History = None) -> tuple[Chunk, ...]:
        return _exposed(await self._acall(question, history))


def _exposed(reply: Reply) -> tuple[Chunk, ...]:
    if reply.retrieved is None:
        raise AdapterOutputError("the pipeline returned no documents, so retrieval is not exposed")
    return reply.retrieved


def _json_safe(metadata: dict[str, Any]) -> dict[str, Any]:
    try:
        json.dumps(metadata)
        return metadata
    except (TypeError, ValueError):
        return json_object(metadata)


def json_object(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as the JSON object they stand for: a deep copy in JSON's
    types (tuples become lists), values JSON cannot hold (datetimes...) their ``str``."""
    return json.loads(json.dumps(dict(mapping), default=str))


def _short(text: Any) -> str:
    flat = " ".join(str(text).split())
    return flat[:60] + ("..." if len(flat) > 60 else "")


def _type(value: Any) -> str:
    return "None" if value is None else type(value).__name__
