"""``LiteLLMJudge``: the Judge behind every judge-backed metric.

One ``ask(prompt, inputs)`` is one logical judge question:

1. cache lookup on (model, prompt key, input hash) unless ``use_cache`` is off; the
   prompt key is the prompt's sha256, and the reply format sent beside it when that
   is a JSON schema (``prompt_key``), so a reply asked for by prompt alone is never
   served to a schema run, nor the other way round;
2. under the concurrency semaphore and the breaker (``breaker.py``: a judge that
   cannot answer raises ``JudgeUnavailable`` before the call), reserve budget
   (``BudgetExceeded`` is raised *before* the call and propagates), call the judge
   (with the prompt's reply schema as ``response_format`` when LiteLLM says the
   model takes one), validate the reply;
3. an invalid reply gets exactly one repair retry, with the bad reply and the
   validation error appended to the conversation (budget-checked too);
4. a validated reply is cached; a second invalid reply or a transport failure
   becomes ``JudgeVerdict(ok=False)``, which the metric records as judge_error.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from ragproof_core.interruption import Interruption
from ragproof_core.judge.breaker import Breaker, Outcome
from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.client import (
    JSON_OBJECT,
    LiteLLMClient,
    RawReply,
    TransportError,
    flush_litellm,
    import_litellm,
)
from ragproof_core.judge.combined import (
    ask_combined,
    combined_unused_prompts,
    estimate_combined,
)
from ragproof_core.judge.cost import (
    ASSUMED_OUTPUT_TOKENS,
    CACHED_REQUEST,
    Budget,
    RequestEstimate,
    call_cost,
    estimate_input_tokens,
    estimate_tokens,
)
from ragproof_core.judge.pricing import Prices, model_prices
from ragproof_core.judge.prompts import (
    GENERATION_PROMPT_NAMES,
    Prompt,
    PromptError,
    load_prompts,
    render,
)
from ragproof_core.judge.rate_limit import RateLimiter
from ragproof_core.judge.reply_cache import CachedReply, input_hash
from ragproof_core.judge.schemas import (
    ReplyValidationError,
    parse_reply,
    reply_schema,
    response_format,
)
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import JudgeVerdict
from ragproof_core.judge.usage import UsageTally
from ragproof_core.masking import Masker
from ragproof_core.store_health import StoreHealth

# Between an input hash and its repeat index in a judge repeat's cache key.
REPEAT_KEY = "+repeat"

# The reply formats a run records (``LiteLLMJudge.reply_format``).
JSON_SCHEMA_FORMAT = "json_schema"
JSON_OBJECT_FORMAT = "json_object"

REPAIR_INSTRUCTION = (
    "Your reply above failed validation: {error}. "
    "Reply again with only the corrected JSON object of the required shape, and nothing else."
)


@dataclass
class JudgeStats:
    """Counters for one judge session. ``requests`` counts judge calls, repairs
    included (a call's internal transport retries are not counted separately);
    ``repairs`` counts the repair requests alone. Tokens are the provider's
    figures, else the 4-characters-per-token estimate."""

    requests: int = 0
    repairs: int = 0
    cache_hits: int = 0
    calls_ok: int = 0
    judge_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # Why the first question that gave no verdict failed (None: none failed).
    first_error: str | None = None


def supports_response_schema(model: str) -> bool:
    """Whether LiteLLM says ``model`` takes a JSON schema as ``response_format``."""
    litellm = import_litellm()
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # noqa: BLE001 - a model LiteLLM cannot place takes the prompt alone
        return False


class LiteLLMJudge:
    def __init__(
        self,
        env: JudgeEnv,
        cache: JudgeCache | None,
        use_cache: bool = True,
        concurrency: int = 16,
        client: LiteLLMClient | None = None,
        prompts: dict[str, Prompt] | None = None,
        budget: Budget | None = None,
        owns_cache: bool = False,
        limiter: RateLimiter | None = None,
        usage: UsageTally | None = None,
        share_from: LiteLLMJudge | None = None,
        health: StoreHealth | None = None,
        masker: Masker | None = None,
        interruption: Interruption | None = None,
        repeat: int = 1,
    ) -> None:
        if env.model is None:
            raise ValueError("LiteLLMJudge needs a model (RAGPROOF_JUDGE_MODEL)")
        if client is not None and client.model != env.model:
            raise ValueError(f"client model {client.model!r} differs from {env.model!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.model: str = env.model
        self.env = env
        # Which of a request's judge repeats this judge sends (CONTRACT section 27): each
        # repeat's replies are cached under a key of their own (``cache_key``).
        self.repeat = repeat
        self.cache = cache
        self.use_cache = use_cache
        self.concurrency = concurrency
        self.client = client or LiteLLMClient(
            env.model,
            env.api_base,
            timeout_s=env.timeout_s,
            max_attempts=env.max_attempts,
            backoff_base_s=env.backoff_s,
            masker=masker,
        )
        self.prompts = load_prompts() if prompts is None else prompts
        if env.mode == "combined" and "combined" not in self.prompts:
            raise PromptError("combined judge mode needs the prompt template combined.txt")
        self.budget = Budget(env.max_cost_usd) if budget is None else budget
        # None: nothing prices this model, so its cost is unknown (counted as 0 here,
        # reported as unknown, and judge_environment refuses a budget over it).
        self.prices: Prices | None = model_prices(env.model, env)
        self._stats = JudgeStats()
        # Checked before every request: once the store cannot keep a verdict, none is bought.
        self.health = StoreHealth() if health is None else health
        # Checked before every request too: after a signal, no new request is sent.
        self.interruption = interruption
        self._owns_cache = owns_cache
        # Per (metric, model) counts; a jury's models share one tally.
        self.usage = UsageTally() if usage is None else usage
        if limiter is not None:
            # The slot is taken as the request leaves: a provider counts arrivals.
            self.client.at_send = limiter.acquire
        # Stops the run's requests when this model cannot answer (CONTRACT section 24).
        self.breaker = Breaker(env.model)
        # Whether replies are asked for with a JSON schema: LiteLLM is asked once, when a
        # cache key or a request first needs it (its import costs seconds).
        self._structured: bool | None = None
        # A jury's models share the first model's concurrency limit (run.concurrency in total).
        self._share_from = share_from
        # asyncio primitives bind to the loop that first waits on them; a judge
        # reused across asyncio.run() calls gets a fresh semaphore per loop.
        self._semaphore: asyncio.Semaphore | None = None
        self._semaphore_loop: asyncio.AbstractEventLoop | None = None

    @property
    def mode(self) -> str:
        """``per_metric`` or ``combined`` (CONTRACT section 12)."""
        return self.env.mode

    @property
    def prompt_hashes(self) -> dict[str, str]:
        """The evaluation prompts' hashes, recorded with each run. Test-set generation
        prompts are left out: editing them must not make compare refuse runs. Only
        the prompts this judge mode asks are in: runs in different modes then differ
        in their hashes, and compare refuses to mix them."""
        unused = combined_unused_prompts(self.mode) | set(GENERATION_PROMPT_NAMES)
        # A rubric metric's prompt is recorded under the metric's name in both modes:
        # in combined mode its part carries the rubric, so its hash still tells.
        return {n: p.sha256 for n, p in sorted(self.prompts.items()) if n not in unused}

    def add_prompts(self, prompts: dict[str, Prompt]) -> None:
        """Prompts a run's config fills in (rubric metrics), beside the shipped ones."""
        self.prompts = {**self.prompts, **prompts}

    async def ask_combined(self, parts: dict[str, dict[str, Any]]) -> dict[str, JudgeVerdict]:
        """Combined mode: every part of one case in one request (``judge.combined``)."""
        return await ask_combined(self, parts)

    def estimate_combined(self, parts: dict[str, dict[str, Any]]) -> RequestEstimate:
        return estimate_combined(self, parts)

    async def send(
        self, messages: list[dict[str, str]], fmt: dict[str, Any], *, repair: bool
    ) -> RawReply:
        """One budgeted, counted request (combined mode); ``TransportError`` propagates."""
        reply, _ = await self.request("combined", messages, fmt, repair=repair)
        return reply

    @property
    def structured(self) -> bool:
        """Whether each prompt's reply schema is sent as ``response_format`` (LiteLLM
        says the model takes one), else JSON mode and the prompt alone."""
        if self._structured is None:
            self._structured = supports_response_schema(self.model)
        return self._structured

    @property
    def reply_format(self) -> str:
        """The reply format this judge asks for, as its run records it."""
        return JSON_SCHEMA_FORMAT if self.structured else JSON_OBJECT_FORMAT

    @property
    def unavailable(self) -> str | None:
        """Why the breaker stopped this judge's requests; None while it has not."""
        return self.breaker.reason

    def prompt_key(self, prompt: Prompt) -> str:
        """The cache's prompt key: the prompt's sha256, with the reply format beside it
        when that is a schema (a prompt-only reply's key is the sha256 alone, as before)."""
        return f"{prompt.sha256}+{JSON_SCHEMA_FORMAT}" if self.structured else prompt.sha256

    def response_format(self, prompt: Prompt, schema: dict[str, Any] | None = None) -> dict:
        """What a request of ``prompt`` sends as ``response_format``: ``schema`` (else the
        prompt's reply schema) when the model takes one, else JSON mode."""
        if not self.structured:
            return JSON_OBJECT
        if schema is None:
            schema = reply_schema(prompt.name, prompt.verdicts)
        return response_format(prompt.name, schema)

    async def request(
        self,
        prompt_name: str,
        messages: list[dict[str, str]],
        fmt: dict[str, Any],
        *,
        repair: bool,
    ) -> tuple[RawReply, float]:
        """One request, through the breaker, budgeted and counted (under ``prompt_name``):
        the reply and its cost. ``TransportError`` (counted by the breaker),
        ``BudgetExceeded`` and ``JudgeUnavailable`` (neither sent) propagate."""
        self.health.check()
        if self.interruption is not None:
            self.interruption.check()
        async with self.breaker.request():
            reservation = self.budget.reserve(self.estimate_usd(messages))
            self._stats.requests += 1
            self._stats.repairs += int(repair)
            self.usage.add(prompt_name, self.model, requests=1)
            try:
                reply = await self.client.complete(messages, fmt)
            except TransportError as exc:
                self.budget.settle(reservation, 0.0)  # nothing was billed for a failed call
                self.breaker.record(exc.outcome, str(exc))
                raise
            except BaseException:  # cancelled: release the reservation, then propagate
                self.budget.settle(reservation, 0.0)
                raise
            self.breaker.record(Outcome.ANSWERED)
        actual = self._actual_usd(prompt_name, messages, reply)
        self.budget.settle(reservation, actual)
        self._stats.cost_usd += actual
        return reply, actual

    def note_failure(self, error: str, questions: int = 1) -> None:
        """Count ``questions`` that gave no verdict; the first reason is kept."""
        self._stats.judge_errors += questions
        if self._stats.first_error is None:
            self._stats.first_error = error

    @property
    def stats(self) -> JudgeStats:
        return replace(self._stats)

    def count(self, **increments: int) -> None:
        """Add to this judge's counters (``JudgeStats`` fields), for combined mode's requests."""
        for name, n in increments.items():
            setattr(self._stats, name, getattr(self._stats, name) + n)

    def close(self) -> None:
        """Close the cache if this judge opened it (``make_judge``)."""
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    async def drain(self) -> None:
        """Await before the event loop that ran ``ask`` ends (see ``flush_litellm``);
        closes the rate limit's HTTP session of this loop."""
        await flush_litellm()
        await self.client.aclose()

    def prompt(self, name: str) -> Prompt:
        try:
            return self.prompts[name]
        except KeyError:
            raise PromptError(f"unknown prompt {name!r}; known: {sorted(self.prompts)}") from None

    def cache_key(self, inputs: dict[str, Any]) -> str:
        """The cache's input key of a question: the hash of its inputs, with the repeat
        index beside it for a judge repeat after the first. The first repeat's key is the
        plain one, so a run with judge repeats reuses the replies of a run without."""
        key = input_hash(inputs)
        return key if self.repeat == 1 else f"{key}{REPEAT_KEY}{self.repeat}"

    def cached_reply(self, prompt: Prompt, key: str) -> CachedReply | None:
        if not self.use_cache or self.cache is None:
            return None
        return self.cache.get(self.model, self.prompt_key(prompt), key)

    @property
    def priced(self) -> bool:
        return self.prices is not None

    def _call_cost(self, input_tokens: int, output_tokens: int) -> float:
        if self.prices is None:
            return 0.0
        return call_cost(
            input_tokens, output_tokens, self.prices.input_per_mtok, self.prices.output_per_mtok
        )

    def estimate_usd(self, messages: list[dict[str, str]]) -> float:
        return self._call_cost(estimate_input_tokens(messages), ASSUMED_OUTPUT_TOKENS)

    def estimate_request(self, messages: list[dict[str, str]]) -> RequestEstimate:
        """A request to send, as a dry run prices it (4 characters a token in, the
        assumed reply out)."""
        tokens = estimate_input_tokens(messages)
        cost = self._call_cost(tokens, ASSUMED_OUTPUT_TOKENS)
        return RequestEstimate(False, cost, tokens, ASSUMED_OUTPUT_TOKENS)

    def _actual_usd(self, prompt: str, messages: list[dict[str, str]], reply: RawReply) -> float:
        # Provider usage when reported, else 4 characters per token (metrics.md).
        input_tokens = reply.input_tokens
        if input_tokens is None:
            input_tokens = estimate_input_tokens(messages)
        output_tokens = reply.output_tokens
        if output_tokens is None:
            output_tokens = estimate_tokens(reply.text)
        self._stats.input_tokens += input_tokens
        self._stats.output_tokens += output_tokens
        cost = self._call_cost(input_tokens, output_tokens)
        self.usage.add(
            prompt,
            self.model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
        )
        return cost

    def estimate(self, prompt: str, inputs: dict[str, Any]) -> RequestEstimate:
        """The question served from the cache, or its request estimated, without calling
        anything: for --dry-run. Reads the cache, never writes it."""
        chosen = self.prompt(prompt)
        if self.cached_reply(chosen, self.cache_key(inputs)) is not None:
            return CACHED_REQUEST
        return self.estimate_request(render(chosen, inputs))

    def semaphore(self) -> asyncio.Semaphore:
        if self._share_from is not None:
            return self._share_from.semaphore()
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._semaphore_loop is not loop:
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._semaphore_loop = loop
        return self._semaphore

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict:
        chosen = self.prompt(prompt)
        messages = render(chosen, inputs)  # bad inputs are a caller bug: raise, don't call
        key = self.cache_key(inputs)
        hit = self.cached_reply(chosen, key)
        if hit is not None:
            self._stats.cache_hits += 1
            self.usage.add(prompt, self.model, cache_hits=1)
            return JudgeVerdict(ok=True, data=hit.data, raw=hit.raw, cost_usd=0.0, cached=True)
        async with self.semaphore():
            return await self._ask_judge(chosen, key, messages)

    async def _ask_judge(
        self, prompt: Prompt, key: str, messages: list[dict[str, str]]
    ) -> JudgeVerdict:
        cost = 0.0
        requests = 0
        raw: str | None = None
        error = ""
        fmt = self.response_format(prompt)
        for attempt in (1, 2):
            try:
                reply, actual = await self.request(prompt.name, messages, fmt, repair=attempt == 2)
            except TransportError as exc:
                requests += 1
                return self._failed(
                    prompt.name, raw, f"judge transport failed: {exc}", cost, requests
                )
            requests += 1
            cost += actual
            raw = reply.text
            try:
                data = parse_reply(prompt.name, reply.text, prompt.verdicts)
            except ReplyValidationError as exc:
                error = str(exc)
                if attempt == 1:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": REPAIR_INSTRUCTION.format(error=error)},
                    ]
                continue
            if self.use_cache and self.cache is not None:
                self.cache.put(
                    self.model,
                    self.prompt_key(prompt),
                    key,
                    data,
                    reply.text,
                    reply.input_tokens,
                    reply.output_tokens,
                    cost,
                )
            self._stats.calls_ok += 1
            return JudgeVerdict(ok=True, data=data, raw=raw, cost_usd=cost, requests=requests)
        return self._failed(
            prompt.name, raw, f"reply failed validation twice: {error}", cost, requests
        )

    def _failed(
        self, prompt: str, raw: str | None, error: str, cost: float, requests: int
    ) -> JudgeVerdict:
        self.note_failure(error)
        self.usage.add(prompt, self.model, judge_errors=1)
        return JudgeVerdict(
            ok=False, data=None, raw=raw, error=error, cost_usd=cost, requests=requests
        )
