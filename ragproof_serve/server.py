"""Run the results browser on 127.0.0.1 (``ragproof serve`` and ``ragproof label``).

The socket is bound here, before the app is built, so the app knows the
port it answers as (the ``Host`` check) even when the port was picked free
by the system; the address is printed once the socket listens, so a script
(or a test) can read it and open the page.

Connections are bounded in time: uvicorn closes one idle after a response
(``timeout_keep_alive``) but waits for ever for a new connection's first request,
so a connection that sends nothing, or its headers a byte at a time, is closed once
``HEADERS_TIMEOUT_S`` pass without a whole request's headers (``BoundedH11Protocol``).
Header size is h11's bound (16 kB); a body's is the app's.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import TextIO

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ragproof_serve.app import Browser, build_app

HOST = "127.0.0.1"  # never another interface: the app has no authentication
HEADERS_TIMEOUT_S = 10.0  # from a connection (or its last response) to a request's headers
KEEP_ALIVE_S = 5.0


class BoundedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline for each request's headers."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # a whole request line and headers came
            self._cancel_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE:  # waiting for the next request's headers
            self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(HEADERS_TIMEOUT_S, self._headers_late)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_late(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


class PortInUse(OSError):
    """The port asked for is taken; the message is the one line the user sees."""


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: a free port the system picks)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise PortInUse(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def serve(browser: Browser, port: int = 0, *, out: TextIO = sys.stdout) -> None:
    """Serve until interrupted; prints the page's URL first."""
    sock = bind(port)
    port = sock.getsockname()[1]
    browser.warm()
    app = build_app(browser, port)
    path = f"/label/{browser.label.run_id}" if browser.label is not None else "/"
    print(f"ragproof: serving {browser.store.layout.location} at http://{HOST}:{port}/", file=out)
    if browser.label is not None:
        print(
            f"ragproof: labelling run {browser.label.run_id} at http://{HOST}:{port}{path}",
            file=out,
        )
    out.flush()
    config = uvicorn.Config(
        app,
        http=BoundedH11Protocol,
        timeout_keep_alive=KEEP_ALIVE_S,
        log_level="warning",
        lifespan="off",
        access_log=False,
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
