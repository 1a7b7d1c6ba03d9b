"""What the judge did in one run: the record the judge IO manager stores and
the run summary reads (model, prompt hashes, requests, cache hits, cost)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ragproof_core.judge.cost import rounded_usd


@dataclass(frozen=True, slots=True)
class JudgeLedger:
    model: str | None = None
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    use_cache: bool = True
    mode: str = "per_metric"
    requests: int = 0
    repairs: int = 0
    cache_hits: int = 0
    judge_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # One row per (metric, model): requests, cache_hits, judge_errors, tokens, cost_usd.
    usage: list[dict[str, Any]] = field(default_factory=list)
    # False when a judge model had no price (judge/pricing.py): the cost is unknown, not 0.
    priced: bool = True
    # Why the first question that gave no verdict failed; None when none failed.
    first_error: str | None = None
    # The reply format asked for ("json_schema" or "json_object"; a jury's may name each
    # model's); None when the run asked the judge nothing.
    response_format: str | None = None
    # Why the breaker stopped the run's requests (``breaker.py``); None when it did not.
    unavailable: str | None = None

    @property
    def known_cost_usd(self) -> float | None:
        """The run's judge cost; None when it is unknown (requests were sent to a
        model nothing prices: without a request, nothing was spent)."""
        known = self.priced or self.model is None or self.requests == 0
        return self.cost_usd if known else None

    @property
    def known_usage(self) -> list[dict[str, Any]]:
        """``usage`` with each row's cost None when the cost is unknown."""
        if self.known_cost_usd is not None:
            return [dict(row) for row in self.usage]
        return [{**row, "cost_usd": None} for row in self.usage]

    def activity(self) -> dict[str, Any]:
        """The ``judge`` object of ``run --json`` and ``show --json`` (CONTRACT section 9)."""
        return {
            "model": self.model,
            "mode": self.mode,
            "requests": self.requests,
            "repairs": self.repairs,
            "cache_hits": self.cache_hits,
            "judge_errors": self.judge_errors,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.known_cost_usd,
            "usage": self.known_usage,
        }

    def with_rounded_cost(self) -> JudgeLedger:
        """The ledger with its dollar figures rounded (``cost.USD_DECIMALS``): the
        run's totals are sums of per-call and per-shard costs."""
        return replace(
            self,
            cost_usd=rounded_usd(self.cost_usd),
            usage=[
                {**row, "cost_usd": rounded_usd(row["cost_usd"])} if "cost_usd" in row else row
                for row in self.usage
            ],
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeLedger:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def judge_ledger(judge, *, use_cache: bool) -> JudgeLedger:
    """What ``judge`` (None: no judge) has done so far, as the ledger records it."""
    if judge is None:
        return JudgeLedger(model=None, use_cache=use_cache)
    stats = judge.stats
    asked = stats.requests > 0 or stats.cache_hits > 0
    return JudgeLedger(
        model=judge.model,
        mode=getattr(judge, "mode", "per_metric"),
        prompt_hashes=dict(judge.prompt_hashes),
        use_cache=use_cache,
        requests=stats.requests,
        repairs=stats.repairs,
        cache_hits=stats.cache_hits,
        judge_errors=stats.judge_errors,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
        cost_usd=stats.cost_usd,
        usage=judge.usage.rows(),
        priced=judge.priced,
        first_error=stats.first_error,
        # Asked only when the judge was: whether a schema is sent is LiteLLM's to say.
        response_format=judge.reply_format if asked else None,
        unavailable=judge.unavailable,
    )
