from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from ragproof_core.judge.breaker import Outcome
from ragproof_core.judge.client import (
    RETRY_AFTER_MAX_S,
    LiteLLMClient,
    RawReply,
    TransportError,
    redact_secrets,
    retry_after_seconds,
    token_count,
)
from tests.core.judge.conftest import API_KEY, MODEL, closed_port, run
from tests.support.judge_server import JudgeServer, Reply

# LiteLLM builds some pydantic schemas lazily on its first call; their warnings are not ours.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")


MESSAGES = [
    {"role": "system", "content": "ragproof-prompt: refusal\nJudge."},
    {"role": "user", "content": "<<<BEGIN DATA-0 answer>>>\nI don't know.\n<<<END DATA-0>>>"},
]


def client(api_base: str, **kwargs: Any) -> LiteLLMClient:
    options = {"max_attempts": 4, "backoff_base_s": 0.001, "backoff_max_s": 0.01} | kwargs
    return LiteLLMClient(MODEL, api_base, **options)


def test_a_call_returns_text_and_usage_and_sends_the_contract_parameters(
    server: JudgeServer,
) -> None:
    reply = run(client(server.url).complete(MESSAGES))
    assert reply == RawReply('{"refused": true}', 100, 20)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert (body["model"], body["temperature"], body["response_format"]) == (
        "judge-test",
        0,
        {"type": "json_object"},
    )
    assert body["messages"] == MESSAGES


def test_the_api_key_travels_only_in_the_authorization_header(server: JudgeServer) -> None:
    run(client(server.url).complete(MESSAGES))
    (request,) = server.requests
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert API_KEY not in str(request.body)
    assert all(API_KEY not in v for k, v in request.headers.items() if k != "Authorization")


def test_missing_usage_is_reported_as_none(server: JudgeServer) -> None:
    server.usage = None
    reply = run(client(server.url).complete(MESSAGES))
    assert (reply.input_tokens, reply.output_tokens) == (None, None)


def test_a_429_burst_is_retried_until_success(server: JudgeServer) -> None:
    server.script(Reply.error(429, retry_after=30), 429, 429)  # Retry-After capped at 0.01 s
    reply = run(client(server.url, retry_after_max_s=0.01).complete(MESSAGES))
    assert reply.text == '{"refused": true}'
    assert server.request_count == 4


def test_408_500_and_503_are_retried(server: JudgeServer) -> None:
    server.script(408, 500, 503)
    run(client(server.url).complete(MESSAGES))
    assert server.request_count == 4


def test_persistent_500_gives_up_after_max_attempts(server: JudgeServer) -> None:
    server.script(*[500] * 3)
    with pytest.raises(TransportError, match=r"HTTP 500.*gave up after 3 attempt\(s\)"):
        run(client(server.url, max_attempts=3).complete(MESSAGES))
    assert server.request_count == 3


@pytest.mark.parametrize("status", [400, 401, 404])
def test_other_4xx_are_not_retried(server: JudgeServer, status: int) -> None:
    # (422 is left out: with drop_params LiteLLM itself re-sends once without the
    # parameters a 422 names, which is the point of drop_params.)
    server.script(status)
    with pytest.raises(TransportError, match=rf"HTTP {status}.*not retryable"):
        run(client(server.url).complete(MESSAGES))
    assert server.request_count == 1


def test_a_refused_connection_is_retried_then_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(TransportError, match=r"gave up after 2 attempt\(s\)") as raised:
        run(client(url, max_attempts=2).complete(MESSAGES))
    assert raised.value.outcome is Outcome.NO_ANSWER  # no answer: the breaker's first rule waits


def test_a_hang_past_the_timeout_is_retried(server: JudgeServer) -> None:
    # A 2 s timeout against a 30 s hang: no loaded machine turns a reply into a timeout.
    server.script(Reply.hang(30.0))
    reply = run(client(server.url, timeout_s=2.0).complete(MESSAGES))
    assert reply.text == '{"refused": true}'
    assert server.request_count == 2


def test_backoff_is_deterministic_exponential_capped_and_honours_retry_after() -> None:
    c = LiteLLMClient(MODEL, backoff_base_s=0.5, backoff_max_s=8)
    assert [c.backoff_s(n) for n in (1, 2, 3, 4, 5, 6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    # The server's Retry-After is what is waited, past our own cap, up to 60 s.
    assert c.backoff_s(1, retry_after_s=3.0) == 3.0
    assert c.backoff_s(1, retry_after_s=45.0) == 45.0
    assert c.backoff_s(1, retry_after_s=600.0) == RETRY_AFTER_MAX_S == 60.0
    assert c.backoff_s(3, retry_after_s=0.1) == 0.1


def test_retry_after_is_read_as_seconds_or_an_http_date_capped_at_60_s() -> None:
    now = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("7", now) == 7.0
    assert retry_after_seconds("0.5", now) == 0.5
    assert retry_after_seconds("3600", now) == 60.0
    assert retry_after_seconds("Mon, 07 Dec 2026 12:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Mon, 07 Dec 2026 13:00:00 GMT", now) == 60.0
    assert retry_after_seconds("Mon, 07 Dec 2026 11:59:00 GMT", now) == 0.0  # past: no wait
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds("", now) is None
    assert retry_after_seconds(None, now) is None


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_on_429_and_503_is_waited_before_the_retry(
    server: JudgeServer, status: int
) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    server.script(Reply.error(status, retry_after=1.5), Reply.error(status, retry_after=when))
    waits: list[float] = []
    c = client(server.url, backoff_max_s=0.001)
    original = c.backoff_s
    c.backoff_s = lambda attempt, after=None: waits.append(original(attempt, after)) or 0.0
    run(c.complete(MESSAGES))
    assert server.request_count == 3
    assert waits[0] == 1.5
    assert 0.0 < waits[1] <= 2.0  # the date, less the time it took to get here


def test_retry_after_of_other_statuses_is_not_read(server: JudgeServer) -> None:
    server.script(Reply.error(500, retry_after=30))
    waits: list[float | None] = []
    c = client(server.url)
    original = c.backoff_s
    c.backoff_s = lambda attempt, after=None: waits.append(after) or original(attempt, after)
    run(c.complete(MESSAGES))
    assert waits == [None]


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (Reply.error(400), Outcome.UNAVAILABLE),
        (Reply.error(401), Outcome.UNAVAILABLE),
        (Reply.error(403), Outcome.UNAVAILABLE),
        (Reply.error(404), Outcome.UNAVAILABLE),
        (Reply.content_filter(), Outcome.ANSWERED),  # this prompt refused, not the judge
    ],
)
def test_refusals_are_not_retried_and_say_what_the_breaker_counts(
    server: JudgeServer, reply: Reply, outcome: Outcome
) -> None:
    server.script(reply)
    with pytest.raises(TransportError, match="not retryable") as raised:
        run(client(server.url).complete(MESSAGES))
    assert server.request_count == 1
    assert raised.value.outcome is outcome


def test_a_5xx_given_up_counts_as_answered_and_failed(server: JudgeServer) -> None:
    server.script(503, 503)
    with pytest.raises(TransportError, match="gave up after 2") as raised:
        run(client(server.url, max_attempts=2).complete(MESSAGES))
    assert raised.value.outcome is Outcome.GAVE_UP


def test_a_missing_key_is_refused_at_once_without_a_request(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(TransportError, match="Missing credentials.*not retryable") as raised:
        run(client(server.url).complete(MESSAGES))
    assert raised.value.outcome is Outcome.UNAVAILABLE
    assert server.request_count == 0


def test_secret_environment_values_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "sk-live-abcdef123")
    assert redact_secrets("bad key sk-live-abcdef123 given") == "bad key *** given"


LAZY_IMPORT = textwrap.dedent(
    """
    import os, socket, sys
    import ragproof_core.judge.session, ragproof_core.metrics.generation
    assert "litellm" not in sys.modules, "litellm imported eagerly"
    connects = []
    original = socket.socket.connect
    def record(self, address):
        connects.append(address)
        return original(self, address)
    socket.socket.connect = record
    from ragproof_core.judge.client import import_litellm
    litellm = import_litellm()
    assert import_litellm() is litellm
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert (litellm.telemetry, litellm.suppress_debug_info, litellm.drop_params) == (
        False, True, True)
    assert litellm.callbacks == [] and litellm.success_callback == []
    print("connects", connects)
    """
)


# What bounds a LiteLLM import in a subprocess: its CPU time (about 5 s, whatever the
# load), so a runaway import fails fast; the wall-clock timeout only catches a hang
# (a blocked network call uses no CPU), and is generous because on a loaded machine
# the same 5 s of CPU take minutes of wall time.
IMPORT_CPU_LIMIT_S = 60
IMPORT_HANG_S = 900


def cpu_limited(script: str) -> str:
    """``script``, killed (SIGXCPU) past ``IMPORT_CPU_LIMIT_S`` seconds of CPU."""
    limit = f"({IMPORT_CPU_LIMIT_S}, {IMPORT_CPU_LIMIT_S})"
    return f"import resource; resource.setrlimit(resource.RLIMIT_CPU, {limit})\n{script}"


@pytest.mark.slow
def test_litellm_is_imported_lazily_and_its_import_touches_no_network() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    done = subprocess.run(
        [sys.executable, "-c", cpu_limited(LAZY_IMPORT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=IMPORT_HANG_S,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "connects []"


def test_usage_figures_that_are_not_positive_whole_numbers_are_not_reported() -> None:
    assert [token_count(v) for v in (12, 0, -5, None, 1.5, "7", True, [3])] == [
        12,
        *[None] * 7,
    ]


def test_a_negative_or_null_usage_block_is_ignored(server: JudgeServer) -> None:
    server.script(Reply(usage={"prompt_tokens": None, "completion_tokens": -5}))
    reply = run(client(server.url).complete(MESSAGES))
    assert (reply.text, reply.input_tokens, reply.output_tokens) == (
        '{"refused": true}',
        None,
        None,
    )


MALFORMED_USAGE_CALLS = """
import asyncio, sys
from ragproof_core.judge.client import LiteLLMClient, TransportError
client = LiteLLMClient("openai/judge-test", sys.argv[1], max_attempts=2, backoff_base_s=0.001)
for _ in range(int(sys.argv[2])):
    try:
        asyncio.run(client.complete([{"role": "user", "content": "ragproof-prompt: refusal"}]))
    except TransportError as exc:
        print("judge error:", str(exc).split(":")[0])
"""

MALFORMED_USAGES = [
    {"prompt_tokens": "lots", "completion_tokens": [1], "total_tokens": {}},
    {"prompt_tokens": 1.5, "completion_tokens": "2", "prompt_tokens_details": "bad"},
    "garbage",
]


def test_a_malformed_usage_block_is_a_judge_error_without_warnings(server: JudgeServer) -> None:
    # One process asks once per malformed block (each reply twice: both attempts);
    # ``-W always::UserWarning`` shows a repeated warning (pydantic's serializer
    # warnings are UserWarnings) every time, not only on its first call.
    server.script(*(Reply(usage=usage) for usage in MALFORMED_USAGES for _ in range(2)))
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "always::UserWarning",
            "-c",
            cpu_limited(MALFORMED_USAGE_CALLS),
            server.url,
            "3",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": API_KEY},
        timeout=IMPORT_HANG_S,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "judge error: InternalServerError (HTTP 500)\n" * 3
    assert server.request_count == 2 * 3
