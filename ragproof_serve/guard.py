"""Who may talk to the results browser: its own address only.

The server binds 127.0.0.1, but a web page on any site can still make the
person's browser send it requests: through DNS rebinding (a hostile name
that resolves to 127.0.0.1, so the request carries that name as ``Host``)
or through a cross-site form or fetch (which carries the hostile site as
``Origin``). So every request must name the server's own address as
``Host``, and every request that changes state (any method but GET, HEAD
and OPTIONS) must come from the server's own pages, whose ``Origin`` is
that address. Anything else is refused with 403 before it reaches a page.

A request carrying either header twice is refused with 400 (RFC 9110 allows one
``Host``): a server that read the last one while a proxy or a check read the first
answered a foreign name as if it were its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def own_hosts(port: int) -> frozenset[str]:
    """The ``Host`` values that name the server at 127.0.0.1:``port``."""
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})


def refusal(headers: dict[str, str], method: str, hosts: Iterable[str]) -> str | None:
    """Why a request is refused, or None. ``headers``: lower-case names."""
    hosts = frozenset(hosts)
    host = headers.get("host", "").lower()
    if host not in hosts:
        return "refused: the Host header does not name this server"
    if method not in SAFE_METHODS:
        origin = headers.get("origin", "").lower()
        if origin not in {f"http://{h}" for h in hosts}:
            return "refused: a request that changes data must come from this server's own pages"
    return None


SINGLE_HEADERS = ("host", "origin")


def repeated(names: Iterable[str]) -> str | None:
    """The first of ``SINGLE_HEADERS`` that ``names`` (lower-case) holds more than once."""
    seen: set[str] = set()
    for name in names:
        if name in SINGLE_HEADERS:
            if name in seen:
                return name
            seen.add(name)
    return None


class SameOriginGuard:
    """ASGI middleware: 403 for a foreign ``Host`` or, on a state-changing request,
    a foreign or missing ``Origin``."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        pairs = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        twice = repeated(name for name, _ in pairs)
        if twice is not None:
            why = f"refused: more than one {twice.title()} header"
            await PlainTextResponse(why, status_code=400)(scope, receive, send)
            return
        why = refusal(dict(pairs), scope["method"], self.hosts)
        if why is None:
            await self.app(scope, receive, send)
            return
        await PlainTextResponse(why, status_code=403)(scope, receive, send)
