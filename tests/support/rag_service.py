"""A tiny real RAG HTTP service on 127.0.0.1 for HttpAdapter tests.

``POST /answer`` with ``{"question": q}`` answers ``{"text": "echo: q", ...}``
citing one chunk; ``POST /retrieve`` returns that chunk in a list (or wrapped
as ``{"chunks": [...]}`` when the question is ``"wrapped"``). Special
questions trigger failures: ``"fail"`` -> 503 with a text body, ``"not-json"``
-> 200 with a non-JSON body; ``"agent"`` answers with ``steps`` (AGENT_STEPS).
Every request is recorded (path, headers, body); ``pause``, when set, is called with
each request before it is answered, on the request's own thread (a slow service).

Questions starting ``echo-`` echo what the request carried, as gateways and debug
proxies do (the secrets tests, CONTRACT section 28): ``echo-401`` answers 401 with
the ``Authorization`` header in its body, ``echo-answer``, ``echo-chunk`` and
``echo-tool`` put it in the answer's text, a chunk's text and a tool call's
arguments, ``echo-500-query`` answers 500 with the request's path and query string.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNK = {"id": "doc1#0", "text": "ragproof evaluates RAG pipelines.", "score": 0.75}
# An agent's trajectory as a service reports it (CONTRACT section 17).
AGENT_STEPS = [
    {"type": "retrieve", "query": "what is ragproof", "chunks": [CHUNK]},
    {"type": "tool", "name": "fetch_page", "arguments": {"url": "/docs", "depth": 1}},
    {"type": "retrieve", "query": "ragproof metrics", "chunks": []},
]


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class RagService:
    """Run with ``with RagService() as service:``; ``service.base`` is ``http://127.0.0.1:PORT``."""

    requests: list[Request] = field(default_factory=list)
    pause: Callable[[Request], None] | None = None

    def __enter__(self) -> RagService:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                received = Request(self.path, dict(self.headers), body)
                service.requests.append(received)
                if service.pause is not None:
                    service.pause(received)
                question = body.get("question") if isinstance(body, dict) else None
                if isinstance(question, str) and question.startswith("echo-"):
                    self._echo(question)
                elif question == "fail":
                    self._reply(503, b"service overloaded:\n  try again later", "text/plain")
                elif question == "not-json":
                    self._reply(200, b"<html>oops</html>", "text/html")
                elif question == "agent":
                    self._json({"text": "an agent's answer", "steps": AGENT_STEPS})
                elif self.path.partition("?")[0] == "/answer":
                    self._json(
                        {
                            "text": f"echo: {question}",
                            "retrieved_chunks": [CHUNK],
                            "citations": [CHUNK["id"]],
                        }
                    )
                elif self.path.partition("?")[0] == "/retrieve":
                    self._json({"chunks": [CHUNK]} if question == "wrapped" else [CHUNK])
                else:
                    self._reply(404, b"no such endpoint", "text/plain")

            def _echo(self, question: str) -> None:
                header = self.headers.get("Authorization", "")
                if question == "echo-401":
                    body = f"invalid credentials: {header} (rejected by the gateway)"
                    self._reply(401, body.encode(), "text/plain")
                elif question == "echo-500-query":
                    self._reply(500, f"upstream failed for {self.path}".encode(), "text/plain")
                elif question == "echo-chunk":
                    chunk = {"id": "doc2", "text": f"request headers: {header}"}
                    self._json({"text": "see the chunk", "retrieved_chunks": [chunk]})
                elif question == "echo-tool":
                    step = {"type": "tool", "name": "lookup", "arguments": {"auth": header}}
                    self._json({"text": "called a tool", "steps": [step]})
                else:
                    self._json({"text": f"you sent {header}", "citations": []})

            def _json(self, payload: Any) -> None:
                self._reply(200, json.dumps(payload).encode(), "application/json")

            def _reply(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # keep test output clean

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval keeps shutdown() (which waits for the next poll) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"
