"""Evaluate a RAG pipeline running as an HTTP service (CONTRACT section 2).

``answer(question)`` POSTs ``{"question": question}`` as JSON to ``url`` and
reads an Answer object; a conversation's turn (CONTRACT section 16) POSTs
``{"question": question, "history": [{"role", "content"}, ...]}``, the earlier
turns, and a single case's body stays ``{"question"}``. It reads an Answer
object (``{"text": ..., "retrieved_chunks": [...], "citations": [...]}``) from
the JSON reply.

Retrieval is exposed only when ``retrieve_url`` is given: the constructor then
returns an ``HttpRetrievingAdapter`` (a subclass with ``retrieve()``), so
``hasattr(adapter, "retrieve")`` tells the truth and retrieval metrics skip
with "adapter does not expose retrieval" otherwise. The retrieve endpoint
receives the same body and replies with a list of chunks, or an object with a
``chunks`` list.

A non-2xx reply raises ``HttpAdapterError`` with the status code and a short
excerpt of the body; the runner turns it into a case failure. ``headers``
(typically an ``Authorization`` header) are sent with every request and kept
out of ``repr()`` and error messages: they may hold secrets.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from ragproof_core.adapters.coerce import to_answer, to_chunks
from ragproof_core.model import Answer, Chunk

_EXCERPT_CHARS = 200


class HttpAdapterError(RuntimeError):
    """The RAG service replied with a non-2xx status or a body that is not JSON."""


class HttpAdapter:
    """Calls a RAG service's answer endpoint; see the module docstring."""

    # Pure asyncio HTTP, never blocking: no loop thread of its own (adapters/isolation.py).
    shares_event_loop = True

    def __new__(cls, *args: Any, **kwargs: Any) -> HttpAdapter:
        retrieve_url = kwargs.get("retrieve_url", args[3] if len(args) > 3 else None)
        if cls is HttpAdapter and retrieve_url is not None:
            cls = HttpRetrievingAdapter
        return super().__new__(cls)

    def __init__(
        self,
        url: str,
        timeout_s: float = 60,
        headers: dict[str, str] | None = None,
        retrieve_url: str | None = None,
    ) -> None:
        self.url = url
        self.retrieve_url = retrieve_url
        self.timeout_s = float(timeout_s)
        self._headers = dict(headers or {})
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={_public_url(self.url)!r})"

    async def answer(self, question: str, history: list[dict[str, str]] | None = None) -> Answer:
        return to_answer(await self._post(self.url, question, history))

    async def aclose(self) -> None:
        """Close the connection pool; the adapter opens a new one if used again."""
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.aclose()

    async def _post(
        self, url: str, question: str, history: list[dict[str, str]] | None = None
    ) -> Any:
        body: dict[str, Any] = {"question": question}
        if history is not None:
            body["history"] = history
        response = await self._http().post(url, json=body)
        if not response.is_success:
            raise HttpAdapterError(
                f"HTTP {response.status_code} from {_public_url(url)}: {_excerpt(response.text)}"
            )
        try:
            return response.json()
        except ValueError:
            raise HttpAdapterError(
                f"reply from {_public_url(url)} is not JSON: {_excerpt(response.text)}"
            ) from None

    def _http(self) -> httpx.AsyncClient:
        # An AsyncClient's connections belong to the event loop that opened
        # them; the adapter may outlive one asyncio.run(), so reopen per loop.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(
                headers=self._headers, timeout=httpx.Timeout(self.timeout_s)
            )
            self._client_loop = loop
        return self._client


class HttpRetrievingAdapter(HttpAdapter):
    """``HttpAdapter`` with ``retrieve()``; built by ``HttpAdapter(..., retrieve_url=...)``."""

    retrieve_url: str

    def __init__(
        self,
        url: str,
        timeout_s: float = 60,
        headers: dict[str, str] | None = None,
        retrieve_url: str | None = None,
    ) -> None:
        if retrieve_url is None:
            raise ValueError("HttpRetrievingAdapter needs retrieve_url")
        super().__init__(url, timeout_s, headers, retrieve_url)

    async def retrieve(
        self, question: str, history: list[dict[str, str]] | None = None
    ) -> tuple[Chunk, ...]:
        reply = await self._post(self.retrieve_url, question, history)
        if isinstance(reply, dict) and "chunks" in reply:
            reply = reply["chunks"]
        return to_chunks(reply)


def _public_url(url: str) -> str:
    """The URL without query string, fragment or credentials, which may carry secrets."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _excerpt(text: str) -> str:
    """The body's first words, cut between two words: a token a service echoes (its
    ``Authorization`` header, in a 401's body) is whole or absent, never half, so the
    run's masker (CONTRACT section 28), which masks whole values, leaves no part of it."""
    flat = " ".join(text.split())
    if len(flat) > _EXCERPT_CHARS:
        cut = flat[: _EXCERPT_CHARS + 1].rsplit(" ", 1)[0]
        return (cut if len(cut) <= _EXCERPT_CHARS else "") + "..."
    return flat or "(empty body)"
