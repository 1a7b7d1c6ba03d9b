"""A local OpenAI-compatible chat-completions server for judge tests and benchmarks.

It serves ``POST /v1/chat/completions`` (and ``/chat/completions``) on
127.0.0.1 from an aiohttp server in a background thread, so a test drives real
LiteLLM over real HTTP. By default every request gets a *valid* reply for the
prompt named by the ``ragproof-prompt: <name>`` marker in the system message:

- groundedness: one claim per sentence of the answer, supported unless the
  sentence contains the word UNSUPPORTED;
- citation_support: every cited chunk supported;
- answer_relevance: "relevant"; completeness: "complete";
- refusal: refused exactly when ragproof's own refusal heuristic says so
  (``robustness.refusal.is_refusal``), so judged and heuristic runs agree;
- test-set generation (``generation_content``): a question built from the
  first words of each chunk; critique_qa approves, answerable exactly when
  the proposed answer is non-empty (qa yes, unanswerable no);
- combined: one key per part named on the ``ragproof-parts:`` line, each the
  reply that part's own prompt would get.
- rubric (a rubric metric's prompt, and its ``custom.*`` part in combined mode):
  the best (last) band, or the worst (first) when the answer matches the
  refusal pattern;
- task_completion: "failed" when the steps block is ``(no steps)`` or the answer
  is a refusal (``is_refusal``), "partial" when the answer contains the word
  PARTIAL, else "complete";
- claim_check: a claim per sentence of the answer (none for a refusal, ``is_refusal``)
  and of the expected answer; a claim
  is in the other text, and supported by a chunk, when that text holds at least half
  of its words of 4+ letters (``states``);
- nugget_support: "full" when the answer holds every word (4+ letters) of the nugget,
  "partial" when some, "none" when none; generate_nuggets: a nugget per sentence of
  the expected answer (at most 10), the first vital;
- knowledge_retention: every assistant turn from the 2nd on retained unless its
  message contains the word FORGOT;
- context_relevance: each chunk graded by the words (4+ letters) it shares with
  the question: 2 or more relevant, 1 partial, none irrelevant. A model whose
  name contains "strict" needs 3 and 2, so a jury of ``judge-test`` and
  ``judge-strict`` disagrees deterministically on borderline chunks.

Tests script deviations with ``server.script(...)``: each queued item answers
one request, in order (a ``Reply``, a content string, an HTTP status int, or a
callable taking the ``ReceivedRequest``). Every request is counted and logged.

It answers as the real providers do, so a test sees what LiteLLM makes of them:

- ``/v1/chat/completions`` is OpenAI's API: its replies, and its error bodies
  (``{"error": {"message", "type", "param", "code"}}``) with the messages OpenAI
  sends for each status (``OPENAI_ERRORS``: a wrong key's 401 echoes the key
  masked, a model it does not serve is a 404 ``model_not_found``...), a
  content-filter 400 (``Reply.content_filter()``), ``Retry-After`` in seconds or
  as an HTTP date (``Reply.error(429, retry_after=...)``);
- ``/v1/messages`` is Anthropic's Messages API (LiteLLM's ``anthropic/`` models
  with ``api_base`` pointing here): its replies (text, or the ``tool_use`` block
  LiteLLM asks for to carry a JSON schema), usage, and its error bodies
  (``{"type": "error", "error": {"type", "message"}}``, ``ANTHROPIC_ERRORS``);
- a ``response_format`` of type ``json_schema`` is checked as OpenAI's strict
  mode checks it (every object closed, every property required: else a 400
  naming the fault) and the reply sent is validated against it: a reply the
  schema would refuse is recorded in ``server.schema_violations``.

Run as a process for CLI tests and benchmarks::

    python -m tests.support.judge_server --port 0 --latency 0.1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from aiohttp import web

from ragproof_core.metrics.heuristics.refusal import is_refusal

_BLOCK = re.compile(
    r"<<<BEGIN (?P<fence>DATA-[0-9a-f]+) (?P<name>\w+)(?: id=(?P<id>\"(?:[^\"\\]|\\.)*\"))?"
    r"(?: index=(?P<index>\d+))?>>>\n"
    r"(?P<text>.*?)\n<<<END (?P=fence)>>>",
    re.DOTALL,
)
# A conversation's message block: "user turn=N" or "assistant turn=N".
_MESSAGE = re.compile(
    r"<<<BEGIN (?P<fence>DATA-[0-9a-f]+) (?P<role>user|assistant) turn=(?P<turn>\d+)>>>\n"
    r"(?P<text>.*?)\n<<<END (?P=fence)>>>",
    re.DOTALL,
)
_MARKER = re.compile(r"^ragproof-prompt: (\w+)$", re.MULTILINE)
_PARTS = re.compile(r"^ragproof-parts: ([\w. ]+)$", re.MULTILINE)
# A rubric prompt's bands: one '- "BAND"' line each; in a combined request, the part's
# line ends 'worst to best: "a", "b".'
_BAND_LINE = re.compile(r'^- ("(?:[^"\\]|\\.)*")$', re.MULTILINE)
_PART_BANDS = r'^"{name}": .*worst to best: (.*)\.$'
_DEFAULT = object()


# What OpenAI answers for each status: (type, code, message); {model} and {key} are filled.
OPENAI_ERRORS: dict[int, tuple[str | None, str | None, str]] = {
    400: (
        "invalid_request_error",
        None,
        "Invalid value for 'response_format': this model does not support it.",
    ),
    401: (
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided: {key}. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
    ),
    403: (
        "invalid_request_error",
        "unsupported_country_region_territory",
        "Country, region, or territory not supported",
    ),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model `{model}` does not exist or you do not have access to it.",
    ),
    408: ("server_error", None, "Request timed out."),
    429: (
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for {model} on requests per min (RPM): Limit 3, Used 3, "
        "Requested 1. Please try again in 20s.",
    ),
    500: (
        "server_error",
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    503: ("server_error", None, "The engine is currently overloaded, please try again later"),
}
# OpenAI's refusal of a prompt its moderation flags (LiteLLM: ContentPolicyViolationError).
OPENAI_CONTENT_FILTER = (
    "invalid_request_error",
    "invalid_prompt",
    "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
    "Please try again with a different prompt.",
)
# What Anthropic answers for each status: (error type, message).
ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "messages: text content blocks must be non-empty"),
    401: ("authentication_error", "invalid x-api-key"),
    403: (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    404: ("not_found_error", "model: {model}"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: (
        "rate_limit_error",
        "This request would exceed your organization's rate limit of 50 requests per minute.",
    ),
    500: ("api_error", "Internal server error"),
    503: ("overloaded_error", "Overloaded"),
    529: ("overloaded_error", "Overloaded"),
}
CONTENT_FILTER = "content_filter"


@dataclass
class Reply:
    """One scripted response. ``content=None`` means "the default valid reply"."""

    content: str | None = None
    status: int = 200
    delay_s: float = 0.0
    # (prompt_tokens, completion_tokens), None to omit, the server default, or any other
    # JSON value sent as the usage block as-is (a malformed one).
    usage: Any = _DEFAULT
    headers: dict[str, str] = field(default_factory=dict)
    # Above 0: the response body is sent 8 bytes at a time, this many seconds apart.
    trickle_s: float = 0.0
    # An error's kind beyond its status (``CONTENT_FILTER``), or None: the provider's
    # usual error body for the status.
    error_kind: str | None = None

    @classmethod
    def error(cls, status: int, retry_after: float | str | None = None) -> Reply:
        """The provider's error for ``status``; ``retry_after``: a Retry-After header,
        seconds or an HTTP date (``email.utils.format_datetime(..., usegmt=True)``)."""
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return cls(status=status, headers=headers)

    @classmethod
    def content_filter(cls) -> Reply:
        """OpenAI's 400 for a prompt its moderation flags."""
        return cls(status=400, error_kind=CONTENT_FILTER)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        return cls(delay_s=seconds)


@dataclass(frozen=True)
class ReceivedRequest:
    """One request. ``body`` is in OpenAI's shape (an Anthropic request's system and
    content blocks turned into chat messages); ``raw_body`` is what was sent."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = 0.0  # time.monotonic() when the request arrived
    raw_body: dict[str, Any] | None = None

    @property
    def provider(self) -> str:
        return ANTHROPIC if self.path.endswith("/messages") else OPENAI

    @property
    def response_format(self) -> dict[str, Any] | None:
        """What the request asked its reply to be: OpenAI's ``response_format``, or for
        Anthropic the schema of the tool LiteLLM forces (as a ``json_schema`` format)."""
        if self.provider == OPENAI:
            return self.body.get("response_format")
        raw = self.raw_body or {}
        tool = (raw.get("tool_choice") or {}).get("name")
        for declared in raw.get("tools") or ():
            if declared.get("name") == tool:
                schema = declared.get("input_schema")
                return {"type": "json_schema", "json_schema": {"name": tool, "schema": schema}}
        return None

    @property
    def prompt(self) -> str | None:
        for message in self.body.get("messages", []):
            if message.get("role") == "system":
                found = _MARKER.search(message.get("content") or "")
                if found:
                    return found.group(1)
        return None

    @property
    def system(self) -> str:
        return next(
            (
                m.get("content") or ""
                for m in self.body.get("messages", [])
                if m["role"] == "system"
            ),
            "",
        )

    def bands(self, part: str | None = None) -> list[str]:
        """A rubric prompt's bands, worst to best (of ``part`` in a combined request)."""
        if part is None:
            return [json.loads(b) for b in _BAND_LINE.findall(self.system)]
        found = re.search(_PART_BANDS.format(name=re.escape(part)), self.system, re.MULTILINE)
        return json.loads(f"[{found.group(1)}]") if found else []

    @property
    def parts(self) -> list[str]:
        """The prompts a ``combined`` request asks, from its ``ragproof-parts:`` line."""
        for message in self.body.get("messages", []):
            if message.get("role") == "system":
                found = _PARTS.search(message.get("content") or "")
                if found:
                    return found.group(1).split()
        return []

    @property
    def user(self) -> str:
        return next(
            (m.get("content") or "" for m in self.body.get("messages", []) if m["role"] == "user"),
            "",
        )

    def messages(self) -> list[dict[str, Any]]:
        """A conversation's message blocks (history or conversation), in order:
        ``{"role", "turn", "text"}``."""
        return [
            {"role": m["role"], "turn": int(m["turn"]), "text": m["text"]}
            for m in _MESSAGE.finditer(self.user)
        ]

    def blocks(self) -> list[dict[str, str]]:
        """The fenced data blocks of the first user message (the data being judged)."""
        user = self.user
        found = []
        for match in _BLOCK.finditer(user):
            block = {"name": match["name"], "text": match["text"]}
            if match["id"] is not None:
                block["id"] = json.loads(match["id"])
            if match["index"] is not None:
                block["index"] = int(match["index"])
            found.append(block)
        return found


OPENAI = "openai"
ANTHROPIC = "anthropic"


def _text(content: Any) -> str:
    """A message's content as text: Anthropic's (and OpenAI's) content blocks joined."""
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content or ""


def openai_view(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages request as OpenAI's chat request (system first)."""
    messages = [
        {"role": m.get("role"), "content": _text(m.get("content"))}
        for m in body.get("messages", [])
    ]
    system = _text(body.get("system"))
    if system:
        messages.insert(0, {"role": "system", "content": system})
    return {**body, "messages": messages}


def strict_schema_fault(schema: Any, path: str = "schema") -> str | None:
    """What OpenAI's strict mode refuses in a JSON schema: an object that is not closed
    (``additionalProperties: false``) or does not require every property; None if none."""
    if not isinstance(schema, dict):
        return f"{path} must be an object"
    if schema.get("type") == "object":
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={path}, 'additionalProperties' is required to be supplied "
                "and to be false"
            )
        if sorted(schema.get("required") or []) != sorted(properties):
            return (
                f"In context={path}, 'required' is required to be supplied and to be an "
                "array including every key in properties"
            )
        for name, sub in properties.items():
            fault = strict_schema_fault(sub, f"{path}.{name}")
            if fault:
                return fault
    if schema.get("type") == "array":
        return strict_schema_fault(schema.get("items"), f"{path}[]")
    return None


_WORD = re.compile(r"[a-z0-9]{4,}")


def _shared_words(question: str, chunk: str) -> int:
    return len(set(_WORD.findall(question.lower())) & set(_WORD.findall(chunk.lower())))


def context_relevance_reply(blocks: list[dict[str, str]], model: str = "") -> dict[str, Any]:
    """The scripted grader for context_relevance (see the module docstring). In a
    combined request the graded chunks are the ``retrieved`` blocks, or the chunk
    blocks ``retrieved_ids`` names."""
    question = next((b["text"] for b in blocks if b["name"] == "question"), "")
    relevant_at, partial_at = (3, 2) if "strict" in model else (2, 1)
    named = next((json.loads(b["text"]) for b in blocks if b["name"] == "retrieved_ids"), None)
    if named is not None:  # combined mode: the graded chunks are among the context's
        context = {b["id"]: b for b in reversed(blocks) if b["name"] == "chunk"}
        chunks = [context[chunk_id] for chunk_id in named]
    else:
        chunks = [b for b in blocks if b["name"] == "retrieved"] or [b for b in blocks if "id" in b]
    verdicts = []
    for block in chunks:
        shared = _shared_words(question, block["text"])
        if shared >= relevant_at:
            relevance = "relevant"
        elif shared >= partial_at:
            relevance = "partial"
        else:
            relevance = "irrelevant"
        verdicts.append({"chunk_id": block["id"], "relevance": relevance})
    return {"verdicts": verdicts}


def default_content(request: ReceivedRequest) -> str:
    """A valid reply for the prompt named in the request.

    A ``combined`` request gets one key per part named on its ``ragproof-parts``
    line, each the reply its own prompt would get, so both judge modes score alike.
    """
    blocks = request.blocks()
    prompt = request.prompt
    if prompt == "combined":
        model = str(request.body.get("model", ""))
        return json.dumps(
            {
                part: rubric_reply(request.bands(part), blocks)
                if part.startswith("custom.")
                else knowledge_retention_reply(request.messages())
                if part == "knowledge_retention"
                else default_reply(part, blocks, model)
                for part in request.parts
            }
        )
    if prompt == "knowledge_retention":
        return json.dumps(knowledge_retention_reply(request.messages()))
    if prompt == "rubric":
        return json.dumps(rubric_reply(request.bands(), blocks))
    reply = default_reply(prompt, blocks, str(request.body.get("model", "")))
    if reply is None:
        return json.dumps({"error": f"no ragproof-prompt marker (got {prompt!r})"})
    return json.dumps(reply)


def knowledge_retention_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    turns = [m for m in messages if m["role"] == "assistant" and m["turn"] >= 2]
    return {"turns": [{"turn": m["turn"], "retained": "FORGOT" not in m["text"]} for m in turns]}


def rubric_reply(bands: list[str], blocks: list[dict[str, str]]) -> dict[str, Any]:
    answer = next((b["text"] for b in blocks if b["name"] == "answer"), "")
    return {"verdict": bands[0] if is_refusal(answer) else bands[-1]}


def default_reply(
    prompt: str | None, blocks: list[dict[str, str]], model: str = ""
) -> dict[str, Any] | None:
    texts = {b["name"]: b["text"] for b in blocks if "id" not in b}
    answer = texts.get("answer", "")
    if prompt == "groundedness":
        claims = [{"claim": s, "supported": "UNSUPPORTED" not in s} for s in sentences(answer)]
        return {"claims": claims}
    if prompt == "citation_support":
        if "cited_ids" in texts:  # combined mode: the cited chunks are in the context
            ids = json.loads(texts["cited_ids"])
        else:
            ids = [b["id"] for b in blocks if "id" in b]
        return {"verdicts": [{"chunk_id": i, "supported": True} for i in ids]}
    if prompt == "answer_relevance":
        return {"verdict": "relevant"}
    if prompt == "completeness":
        return {"verdict": "complete"}
    if prompt == "refusal":
        return {"refused": is_refusal(answer)}
    if prompt in ("generate_qa", "generate_unanswerable", "critique_qa"):
        return json.loads(generation_content(prompt, blocks, texts))
    if prompt == "context_relevance":
        return context_relevance_reply(blocks, model)
    if prompt == "task_completion":
        return task_completion_reply(texts.get("steps", ""), answer)
    if prompt == "claim_check":
        return claim_check_reply(answer, texts.get("expected_answer", ""), blocks)
    if prompt == "nugget_support":
        return nugget_support_reply(answer, [b for b in blocks if b["name"] == "nugget"])
    if prompt == "generate_nuggets":
        return generate_nuggets_reply(texts.get("expected_answer", ""))
    return None


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def states(text: str, claim: str) -> bool:
    """Whether ``text`` holds at least half of ``claim``'s words (4+ letters), and one."""
    words = set(_WORD.findall(claim.lower()))
    found = words & set(_WORD.findall(text.lower()))
    return bool(found) and 2 * len(found) >= len(words)


def claim_check_reply(answer: str, reference: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Claims are sentences; a claim is in the other text, or supported by a chunk, when
    that text ``states`` it."""
    chunks = [b for b in blocks if b["name"] == "chunk"]

    def supporting(claim: str) -> list[str]:
        return list(dict.fromkeys(c["id"] for c in chunks if states(c["text"], claim)))

    return {
        # A refusal makes no claim (as the prompt says).
        "response_claims": [
            {"claim": c, "in_reference": states(reference, c), "chunk_ids": supporting(c)}
            for c in ([] if is_refusal(answer) else sentences(answer))
        ],
        "reference_claims": [
            {"claim": c, "in_response": states(answer, c), "chunk_ids": supporting(c)}
            for c in sentences(reference)
        ],
    }


def nugget_support_reply(answer: str, nuggets: list[dict[str, Any]]) -> dict[str, Any]:
    """full when the answer holds every word (4+ letters) of the nugget, partial when some,
    none when none."""
    verdicts = []
    for nugget in nuggets:
        words = set(_WORD.findall(nugget["text"].lower()))
        found = words & set(_WORD.findall(answer.lower()))
        support = "full" if words and found == words else "partial" if found else "none"
        verdicts.append({"index": nugget["index"], "support": support})
    return {"nuggets": verdicts}


def generate_nuggets_reply(reference: str) -> dict[str, Any]:
    """One nugget a sentence of the expected answer (at most 10), the first one vital."""
    return {
        "nuggets": [
            {"text": text, "vital": i == 0} for i, text in enumerate(sentences(reference)[:10])
        ]
    }


def task_completion_reply(steps: str, answer: str) -> dict[str, Any]:
    if steps == "(no steps)" or is_refusal(answer):
        return {"verdict": "failed"}
    return {"verdict": "partial" if "PARTIAL" in answer else "complete"}


def chunk_topic(text: str, words: int = 6) -> str:
    """The first words of a chunk, which the default generation replies ask about."""
    return " ".join(text.split()[:words]).rstrip(".,;:")


def generation_content(prompt: str, blocks: list[dict[str, str]], texts: dict[str, str]) -> str:
    """Valid replies for the test-set generation prompts (CONTRACT section 13)."""
    chunks = [b["text"] for b in blocks if "id" in b]
    topic = " and ".join(chunk_topic(text) for text in chunks)
    if prompt == "generate_qa":
        answer = chunks[0].split(". ")[0].rstrip(".") + "."
        return json.dumps({"question": f"What is said about {topic}?", "answer": answer})
    if prompt == "generate_unanswerable":
        return json.dumps({"question": f"Which year did {topic} first appear?"})
    answerable = bool(texts.get("answer", "").strip())
    return json.dumps({"standalone": True, "answerable": answerable, "specific": True})


class JudgeServer:
    """``with JudgeServer(latency_s=0.1) as server: ... server.url ...``"""

    def __init__(
        self,
        port: int = 0,
        latency_s: float = 0.0,
        usage: tuple[int, int] | None = (100, 20),
        responder: Callable[[ReceivedRequest], str] = default_content,
    ) -> None:
        self.port = port
        self.latency_s = latency_s
        self.usage = usage
        self.responder = responder
        self.requests: list[ReceivedRequest] = []
        # One (bytes sent, bytes in the body, seconds) per trickled reply, once it ended.
        self.trickles: list[tuple[int, int, float]] = []
        # What a request gets when nothing is scripted (the default valid reply).
        self.fallback: Reply = Reply()
        # (prompt, why) for every reply the request's JSON schema would refuse.
        self.schema_violations: list[tuple[str | None, str]] = []
        self._script: deque[Any] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def arrival_gaps(self) -> list[float]:
        """Seconds between consecutive arrivals, in arrival order (what a provider's
        rate limit counts)."""
        with self._lock:
            arrivals = sorted(r.received_at for r in self.requests)
        return [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]

    def script(self, *items: Reply | str | int | Callable[[ReceivedRequest], Any]) -> None:
        with self._lock:
            self._script.extend(items)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.schema_violations.clear()
            self.fallback = Reply()

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> JudgeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:  # surfaced to the starting thread
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="judge-server", daemon=True)
        self._thread.start()
        ready.wait()
        if errors:
            raise errors[0]

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = None
            self._thread = None

    async def _shutdown(self) -> None:
        await self._runner.cleanup()
        # Handlers still sleeping (scripted hangs) are cancelled, not abandoned.
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _start_site(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_post("/v1/messages", self._handle)
        # Hanging handlers must not hold up shutdown.
        self._runner = web.AppRunner(app, shutdown_timeout=0.1, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    # -- request handling ------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()  # before the body is read: when the request arrived
        try:
            raw = await request.json()
        except json.JSONDecodeError:
            raw = {}
        anthropic = request.path.endswith("/messages")
        body = openai_view(raw) if anthropic else raw
        received = ReceivedRequest(request.path, dict(request.headers), body, arrived, raw)
        with self._lock:
            self.requests.append(received)
            item = self._script.popleft() if self._script else self.fallback
        if callable(item) and not isinstance(item, Reply):
            item = item(received)
        if isinstance(item, str):
            item = Reply(content=item)
        elif isinstance(item, int):
            item = Reply.error(item)
        delay = self.latency_s + item.delay_s
        if delay > 0:
            await asyncio.sleep(delay)
        if item.status != 200:
            # An error's content is its message (a provider echoing what it was sent).
            return self._error(received, item.status, item.error_kind, item.headers, item.content)
        schema = None
        fmt = received.response_format
        if fmt is not None and fmt.get("type") == "json_schema":
            named = fmt.get("json_schema") or {}
            schema = named.get("schema")
            fault = None if anthropic else strict_schema_fault(schema)
            if fault is not None:
                message = f"Invalid schema for response_format '{named.get('name')}': {fault}."
                return self._error(received, 400, None, {}, message)
        content = self.responder(received) if item.content is None else item.content
        if schema is not None:
            self._check_reply(received, schema, content)
        usage = self.usage if item.usage is _DEFAULT else item.usage
        if anthropic:
            payload = self._anthropic_payload(received, content, usage)
        else:
            payload = self._openai_payload(body, content, usage)
        if item.trickle_s > 0:
            return await self._trickle(request, json.dumps(payload).encode(), item)
        return web.json_response(payload, headers=item.headers)

    def _openai_payload(self, body: dict[str, Any], content: str, usage: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "judge-test"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        if usage is not None and not isinstance(usage, tuple):
            payload["usage"] = usage
        elif usage is not None:
            prompt_tokens, completion_tokens = usage
            payload["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        return payload

    def _anthropic_payload(
        self, received: ReceivedRequest, content: str, usage: Any
    ) -> dict[str, Any]:
        """Anthropic's reply: the content as a text block, or as the input of the tool
        the request forces (how LiteLLM asks Anthropic for a JSON schema's reply)."""
        fmt = received.response_format
        block: dict[str, Any] = {"type": "text", "text": content}
        stop = "end_turn"
        if fmt is not None:
            try:
                block = {
                    "type": "tool_use",
                    "id": f"toolu_{len(self.requests)}",
                    "name": fmt["json_schema"]["name"],
                    "input": json.loads(content),
                }
                stop = "tool_use"
            except ValueError:
                pass  # not JSON: sent as text, as a model that ignored the tool would
        payload: dict[str, Any] = {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": received.body.get("model", "judge-test"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
        }
        if isinstance(usage, tuple):
            payload["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
        elif usage is not None:
            payload["usage"] = usage
        return payload

    def _check_reply(self, received: ReceivedRequest, schema: Any, content: str) -> None:
        """Record a reply the request's schema would refuse (the provider would never
        send it): a test of the schemas ragproof sends."""
        try:
            jsonschema.validate(json.loads(content), schema)
        except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError) as exc:
            with self._lock:
                self.schema_violations.append((received.prompt, str(exc).splitlines()[0]))

    def _error(
        self,
        received: ReceivedRequest,
        status: int,
        kind: str | None,
        headers: dict[str, str],
        message: str | None = None,
    ) -> web.Response:
        """The provider's error body for ``status`` (and ``kind``), as it sends it."""
        model = received.body.get("model", "judge-test")
        token = received.headers.get("Authorization", "").removeprefix("Bearer ")
        masked = f"{token[:3]}{'*' * max(len(token) - 7, 0)}{token[-4:]}" if token else ""
        if received.provider == ANTHROPIC:
            kind_, text = ANTHROPIC_ERRORS.get(status, ("api_error", f"HTTP {status}"))
            body: dict[str, Any] = {
                "type": "error",
                "error": {"type": kind_, "message": message or text.format(model=model)},
            }
        else:
            found = OPENAI_CONTENT_FILTER if kind == CONTENT_FILTER else OPENAI_ERRORS.get(status)
            kind_, code, text = found or ("server_error", None, f"HTTP {status}")
            text = message or text.format(model=model, key=masked)
            body = {"error": {"message": text, "type": kind_, "param": None, "code": code}}
        return web.json_response(body, status=status, headers=headers)

    async def _trickle(self, request: web.Request, body: bytes, item: Reply) -> web.StreamResponse:
        """Send ``body`` 8 bytes every ``item.trickle_s`` until done or the client hangs up."""
        response = web.StreamResponse(headers={**item.headers, "Content-Type": "application/json"})
        response.content_length = len(body)
        started = time.monotonic()
        sent = 0
        try:
            await response.prepare(request)
            while sent < len(body):
                await response.write(body[sent : sent + 8])
                sent += min(8, len(body) - sent)
                await asyncio.sleep(item.trickle_s)
                if request.transport is None or request.transport.is_closing():
                    break
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            with self._lock:
                self.trickles.append((sent, len(body), time.monotonic() - started))
        return response


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per reply")
    parser.add_argument("--no-usage", action="store_true", help="omit usage blocks")
    parser.add_argument(
        "--status", type=int, default=200, help="answer every request with this HTTP error"
    )
    args = parser.parse_args(argv)
    server = JudgeServer(args.port, args.latency, None if args.no_usage else (100, 20))
    if args.status != 200:
        server.fallback = Reply.error(args.status)
    server.start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
