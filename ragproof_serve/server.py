"""Run the results browser on 127.0.0.1 (``ragproof serve`` and ``ragproof label``).

The socket is bound here, before the app is built, so the app knows the
port it answers as (the ``Host`` check) even when the port was picked free
by the system; the address is printed once the socket listens, so a script
(or a test) can read it and open the page.
"""

from __future__ import annotations

import socket
import sys
from typing import TextIO

import uvicorn

from ragproof_serve.app import Browser, build_app

HOST = "127.0.0.1"  # never another interface: the app has no authentication


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
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
