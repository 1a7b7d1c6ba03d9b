"""The transport to the judge model: one chat completion through LiteLLM, with retries.

LiteLLM is imported lazily (it costs seconds of CPU and, unless told otherwise,
fetches a price map from the network at import), once per process, through
``import_litellm``. Its own retries are switched off (``max_retries=0``):
LiteLLM's ``num_retries`` needs tenacity and retries even 400s. Ours retry
only transport faults (429, 408, 5xx, timeouts, refused connections) with
bounded, deterministic exponential backoff, and give up immediately on other
4xx, which no retry can fix.

With a rate limit (``at_send``, the RPM limiter's ``acquire``) the slot is
taken where the request leaves, not before LiteLLM's own work on it (the first
call of a process spends about half a second there): LiteLLM sends through an
aiohttp session of ours whose request-start hook awaits the slot (``SendGate``).
Whether a provider's path in LiteLLM uses that session is learnt per event
loop from its first request, which waits for a slot both before the call and
at the send; should the hook not fire, every request takes its slot before the
call instead, as close to the send as LiteLLM allows.

API keys never pass through here: LiteLLM reads them from the environment.
Error messages carry the exception's text (for provider errors the provider's
message, not the request), with any secret-looking environment value masked.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import os
import re
import sys
import warnings
import weakref
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from ragproof_core.judge.breaker import Outcome
from ragproof_core.masking import Masker, environment_secrets

# Status codes worth retrying: rate limits, request timeouts and server faults.
RETRYABLE_STATUS = frozenset({408, 429})
# Refusals no request of this judge gets past (CONTRACT section 24): the breaker counts them.
UNAVAILABLE_STATUS = frozenset({400, 401, 403, 404})
# Statuses whose Retry-After is honoured, and the longest wait it may ask.
RETRY_AFTER_STATUS = frozenset({429, 503})
RETRY_AFTER_MAX_S = 60.0
# The reply format of a prompt that has no schema, or of a model LiteLLM says takes none.
JSON_OBJECT: dict[str, Any] = {"type": "json_object"}


@dataclass
class RawReply:
    """One reply's text and the provider's token usage (None when not reported)."""

    text: str
    input_tokens: int | None
    output_tokens: int | None


class TransportError(Exception):
    """The judge could not be reached or refused the request, after all retries;
    ``outcome``: what the breaker counts it as."""

    def __init__(self, message: str, outcome: Outcome = Outcome.UNAVAILABLE) -> None:
        super().__init__(message)
        self.outcome = outcome


@functools.cache
def import_litellm() -> ModuleType:
    """Import LiteLLM once, configured to make no network call except to the judge."""
    # Must be set before the import: otherwise LiteLLM downloads its price map.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    # LiteLLM's own TypedDicts make pydantic warn (at import and at lazy imports
    # during the first call); pure noise on a user's terminal, so filtered narrowly.
    warnings.filterwarnings(
        "ignore",
        message=r".*`ReadOnly` qualifier",
        category=UserWarning,
        module=r"pydantic\._internal\._generate_schema",
    )
    # A reply with a malformed usage block (tokens as strings, lists...) makes
    # LiteLLM's pydantic models print a multi-line serializer warning before it
    # raises; the call already ends as a counted judge error, so the warning is noise.
    warnings.filterwarnings(
        "ignore",
        message=r"Pydantic serializer warnings",
        category=UserWarning,
        module=r"pydantic\.main",
    )
    # Lazy: LiteLLM takes seconds to import, and runs without a judge never need it.
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    # Providers without response_format get the request without it instead of a 400.
    litellm.drop_params = True
    # No logging integrations: they would ship prompts (and headers) elsewhere.
    litellm.callbacks = []
    litellm.success_callback = []
    litellm.failure_callback = []
    litellm.input_callback = []
    litellm.service_callback = []
    return litellm


async def flush_litellm(timeout_s: float = 5.0) -> None:
    """Let LiteLLM finish its internal post-call bookkeeping on the current event loop.

    LiteLLM queues a bookkeeping coroutine per call (even with no callbacks) on a
    worker bound to the running loop. Awaiting this before an ``asyncio.run``
    ends keeps those coroutines from being carried to the next loop with a
    warning. A no-op when LiteLLM was never imported.
    """
    if "litellm" not in sys.modules:
        return
    # LiteLLM is already imported here (checked above): this import costs nothing.
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout_s)


@dataclass
class SendGate:
    """One attempt's rate-limit slot, taken by the HTTP request-start hook.

    ``take``: whether the hook waits for a slot (False when the attempt already
    took one before the call); ``sent`` counts the requests the hook saw."""

    acquire: Callable[[], Awaitable[object]]
    timeout_s: float
    take: bool = True
    on_send: Callable[[], None] = field(default=lambda: None)
    deadline: asyncio.Timeout | None = None
    sent: int = 0

    async def open(self) -> None:
        self.sent += 1
        self.on_send()
        if not self.take or self.deadline is None:
            return
        # Waiting for the slot is not the provider's time: the reply's deadline
        # starts when the request leaves.
        self.deadline.reschedule(None)
        await self.acquire()
        self.deadline.reschedule(asyncio.get_running_loop().time() + self.timeout_s)


# The gate of the request the current task is sending. LiteLLM sends from the
# task that awaits it, so the session's hook finds the gate of its own request.
_SEND_GATE: ContextVar[SendGate | None] = ContextVar("ragproof_send_gate", default=None)


async def _on_request_start(*_: object) -> None:
    gate = _SEND_GATE.get()
    if gate is not None:
        await gate.open()


def gated_session() -> Any:
    """An aiohttp session whose every request first passes the current task's gate."""
    # aiohttp comes with LiteLLM; importing it here keeps it off the CLI's start-up.
    import aiohttp

    litellm = import_litellm()
    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(_on_request_start)
    trust_env = bool(litellm.aiohttp_trust_env) or os.environ.get(
        "AIOHTTP_TRUST_ENV", ""
    ).lower() in ("1", "true", "yes", "on")
    return aiohttp.ClientSession(trust_env=trust_env, trace_configs=[trace])


async def _close_when_cancelled(session: Any) -> None:
    """Hold ``session`` open until this task is cancelled, then close it: asyncio.run
    and asyncio.Runner cancel a loop's remaining tasks as it ends, so the session
    never outlives its loop unclosed, even where nobody calls ``aclose``."""
    try:
        await asyncio.get_running_loop().create_future()
    finally:
        await session.close()


@dataclass
class _LoopGate:
    """What an event loop's first request showed: does the send hook fire?"""

    settled: asyncio.Event
    fires: bool = False


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After on a 429 or 503, in seconds (sent as seconds or as an
    HTTP date), at most ``RETRY_AFTER_MAX_S``; None when absent or unreadable."""
    if _status_code(exc) not in RETRY_AFTER_STATUS:
        return None
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        return None
    return retry_after_seconds(headers.get("retry-after"))


def retry_after_seconds(value: Any, now: datetime | None = None) -> float | None:
    """A Retry-After header's wait in seconds, capped at ``RETRY_AFTER_MAX_S``: a
    number of seconds, or an HTTP date (a date past is no wait); None when unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT; a zone-less one is read as such
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_S)


# A credential LiteLLM or the provider's SDK found missing before sending anything:
# LiteLLM reports the OpenAI SDK's "Missing credentials ..." as an HTTP 500.
_MISSING_CREDENTIAL = re.compile(r"missing credentials|api_key must be set|no api key", re.I)


def missing_credential(exc: BaseException) -> bool:
    """Whether the request failed before it was sent, for want of a credential."""
    return bool(_MISSING_CREDENTIAL.search(str(exc)))


def got_no_answer(exc: BaseException, litellm: Any) -> bool:
    """Whether the request failed without an answer from the server (a refused or lost
    connection, a timeout), which LiteLLM may report as an HTTP 500: found by the
    socket error or timeout under it."""
    if isinstance(exc, litellm.Timeout | litellm.APIConnectionError):
        return True
    seen: BaseException | None = exc
    for _ in range(16):  # the chain is short; a loop in it must not hang us
        if seen is None:
            return False
        if isinstance(seen, OSError):  # ConnectionError, TimeoutError, aiohttp's connector's
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def is_retryable(exc: BaseException, litellm: Any) -> bool:
    if missing_credential(exc):
        return False  # no retry sets the variable
    if isinstance(exc, litellm.Timeout | litellm.APIConnectionError | litellm.RateLimitError):
        return True
    if isinstance(exc, litellm.InternalServerError | litellm.ServiceUnavailableError):
        return True
    status = _status_code(exc)
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


def refusal_outcome(exc: BaseException, litellm: Any) -> Outcome:
    """What a request refused without retry counts as for the breaker: a refusal of its
    content alone (a content filter, a context window exceeded) says the judge works;
    400, 401, 403, 404 and a missing credential (an error with no status: LiteLLM
    refused to build the request) say no request of this judge can."""
    if missing_credential(exc):
        return Outcome.UNAVAILABLE
    if isinstance(exc, litellm.ContentPolicyViolationError | litellm.ContextWindowExceededError):
        return Outcome.ANSWERED
    status = _status_code(exc)
    return (
        Outcome.UNAVAILABLE
        if status is None or status in UNAVAILABLE_STATUS
        else (Outcome.ANSWERED)
    )


class LiteLLMClient:
    """``complete(messages)``: one judge call at temperature 0, JSON only, bounded retries."""

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        timeout_s: float = 60,
        max_attempts: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8,
        at_send: Callable[[], Awaitable[object]] | None = None,
        masker: Masker | None = None,
        retry_after_max_s: float = RETRY_AFTER_MAX_S,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self.model = model
        self.api_base = api_base
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        # Awaited as every request leaves, retries included: the RPM limiter's hook.
        self.at_send = at_send
        # The run's secret values, masked in every reply and error as they arrive
        # (CONTRACT section 28); outside a run, the environment's secret-named variables'.
        self.masker = Masker(environment_secrets()) if masker is None else masker
        # Per event loop (a session binds to one): the gated session, and whether
        # LiteLLM's path for this model sends through it.
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopGate] = (
            weakref.WeakKeyDictionary()
        )
        self._closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task] = (
            weakref.WeakKeyDictionary()
        )

    def backoff_s(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Delay after failed attempt number ``attempt`` (1-based): the server's
        Retry-After when it sent one (a 429 or 503, at most ``retry_after_max_s``),
        else our own backoff.

        Deterministic (no jitter) so runs and tests are reproducible; the judge's
        concurrency limit already bounds how many calls retry at once.
        """
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_max_s)
        return min(self.backoff_base_s * 2 ** (attempt - 1), self.backoff_max_s)

    async def complete(
        self, messages: list[dict[str, str]], response_format: dict[str, Any] | None = None
    ) -> RawReply:
        """One judge call: ``response_format`` is sent as given (a prompt's JSON schema),
        JSON mode when None. ``TransportError`` after the retries, with its outcome."""
        litellm = import_litellm()
        last: BaseException | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = await self._attempt(litellm, messages, response_format or JSON_OBJECT)
            except Exception as exc:  # classified below; anything unknown is not retried
                if isinstance(exc, TimeoutError):  # our deadline, reported like LiteLLM's own
                    exc = litellm.Timeout(
                        f"no complete reply within {self.timeout_s}s",
                        model=self.model,
                        llm_provider="",
                    )
                last = exc
                if not is_retryable(exc, litellm):
                    raise TransportError(
                        _describe(exc, attempt, True, self.masker),
                        refusal_outcome(exc, litellm),
                    ) from exc
                if attempt < self.max_attempts:
                    await asyncio.sleep(self.backoff_s(attempt, _retry_after_s(exc)))
                continue
            reply = _to_raw_reply(response)
            return replace(reply, text=redact_secrets(reply.text, self.masker))
        assert last is not None
        outcome = Outcome.NO_ANSWER if got_no_answer(last, litellm) else Outcome.GAVE_UP
        raise TransportError(
            _describe(last, self.max_attempts, False, self.masker), outcome
        ) from last

    async def _attempt(
        self, litellm: Any, messages: list[dict[str, str]], response_format: dict[str, Any]
    ) -> Any:
        """One request. LiteLLM's timeout bounds each socket read, so a reply trickling
        a few bytes at a time never hits it: the whole call gets the deadline."""
        call = functools.partial(
            litellm.acompletion,
            model=self.model,
            api_base=self.api_base,
            messages=messages,
            temperature=0,
            response_format=response_format,
            max_retries=0,
            timeout=self.timeout_s,
        )
        if self.at_send is None:
            async with asyncio.timeout(self.timeout_s):
                return await call()
        loop = asyncio.get_running_loop()
        state = self._gates.get(loop)
        probe = state is None
        if state is None:
            state = self._gates[loop] = _LoopGate(asyncio.Event())
        elif not state.settled.is_set():
            await state.settled.wait()  # the probe shows within one slot or so

        def sent() -> None:
            state.fires = True
            state.settled.set()

        # The probe takes a slot before the call and another at the send; once the
        # hook is known to fire, only at the send; while it is not, only before.
        before = probe or not state.fires
        gate = SendGate(self.at_send, self.timeout_s, take=probe or state.fires, on_send=sent)
        try:
            if before:
                await self.at_send()
            session = self._session(loop)
            async with asyncio.timeout(self.timeout_s) as gate.deadline:
                token = _SEND_GATE.set(gate)
                try:
                    return await call(shared_session=session)
                finally:
                    _SEND_GATE.reset(token)
        finally:
            if gate.sent == 0 and not before:
                state.fires = False  # this path never sent through the hook: slot before
            state.settled.set()

    def _session(self, loop: asyncio.AbstractEventLoop) -> Any:
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = self._sessions[loop] = gated_session()
            self._closers[loop] = loop.create_task(_close_when_cancelled(session))
        return session

    async def aclose(self) -> None:
        """Close this event loop's gated session now (else it closes as the loop ends)."""
        loop = asyncio.get_running_loop()
        self._sessions.pop(loop, None)
        closer = self._closers.pop(loop, None)
        if closer is not None:
            closer.cancel()
            await asyncio.wait([closer])


# What LiteLLM puts before the provider's own message ("litellm.AuthenticationError:
# AuthenticationError: OpenAIException - "): the exception's name is said once already.
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+: )?(?:\w+Error: )?(?:\w+Exception - )?")


def _describe(exc: BaseException, attempts: int, final: bool, masker: Masker | None) -> str:
    status = _status_code(exc)
    what = f"{type(exc).__name__}" + (f" (HTTP {status})" if status is not None else "")
    # Before truncating: no partial secret survives.
    text = redact_secrets(str(exc).strip(), masker)
    message = _LITELLM_PREFIX.sub("", text.splitlines()[0]) if text else ""
    if len(message) > 300:
        message = message[:297] + "..."
    tail = "not retryable" if final else f"gave up after {attempts} attempt(s)"
    return f"{what}: {message} [{tail}]" if message else f"{what} [{tail}]"


def redact_secrets(text: str, masker: Masker | None = None) -> str:
    """``text`` (a provider's reply or error) with the run's secret values masked; without
    a run's ``masker``, the values of the environment's secret-named variables (the one
    rule of ``ragproof_core.masking``)."""
    if masker is None:
        masker = Masker(environment_secrets())
    return masker.text(text)


def _to_raw_reply(response: Any) -> RawReply:
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    text = getattr(message, "content", None) or ""
    usage = getattr(response, "usage", None)
    input_tokens = token_count(getattr(usage, "prompt_tokens", None))
    output_tokens = token_count(getattr(usage, "completion_tokens", None))
    return RawReply(text, input_tokens, output_tokens)


def token_count(value: Any) -> int | None:
    """A usage figure as reported, or None when it is not a positive whole number.

    LiteLLM reports a missing usage block as zeros; no real reply has 0 tokens,
    so zero means "not reported" and the cost falls back to the 4-char estimate.
    A negative count, a float or a string from a malformed block is ignored the same way.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value
