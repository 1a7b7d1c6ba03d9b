"""Judge cost: token estimates, prices and the hard budget checked before every call.

Prices are per million tokens (RAGPROOF_JUDGE_INPUT_COST_PER_MTOK and
..._OUTPUT_COST_PER_MTOK). Provider-reported usage is used when present;
otherwise tokens are estimated at 4 characters per token (metrics.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ragproof_core.judge.types import BudgetExceeded

CHARS_PER_TOKEN = 4
# Output size assumed when reserving budget before a call. Verdict replies are
# short (one enum or boolean); groundedness lists one claim per statement, and
# ~200 tokens covers a typical answer's 5-10 claims. The reservation is only a
# pre-call guard: the settled cost uses the real (or estimated) output.
ASSUMED_OUTPUT_TOKENS = 200
# Dollar figures shown or stored are rounded to a millionth of a dollar: one
# token at $1 per million tokens, the smallest price step that matters. Digits
# past it are only the residue of adding thousands of per-call costs.
USD_DECIMALS = 6


@dataclass(frozen=True, slots=True)
class RequestEstimate:
    """One question as a dry run counts it: its reply in the judge cache (free), or a
    request to send, with its estimated tokens and cost."""

    cached: bool
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0


CACHED_REQUEST = RequestEstimate(cached=True)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def messages_chars(messages: Iterable[dict[str, str]]) -> int:
    return sum(len(m.get("content") or "") for m in messages)


def estimate_input_tokens(messages: Iterable[dict[str, str]]) -> int:
    return math.ceil(messages_chars(messages) / CHARS_PER_TOKEN)


def format_usd(cost_usd: float | None) -> str:
    """Money as the terminal shows it; None is a cost nothing could price (judge/pricing.py)."""
    return "unknown" if cost_usd is None else f"${cost_usd:.4f}"


def rounded_usd(amount: float) -> float:
    return round(amount, USD_DECIMALS)


def call_cost(
    input_tokens: int, output_tokens: int, input_per_mtok: float, output_per_mtok: float
) -> float:
    return (input_tokens * input_per_mtok + output_tokens * output_per_mtok) / 1_000_000


@dataclass
class Reservation:
    amount_usd: float
    settled: bool = False


class Budget:
    """A hard spending limit; ``max_usd=None`` means unlimited.

    ``reserve`` runs before each call and refuses it when what is spent, plus
    what calls in flight have reserved, plus this call's estimate would pass the
    limit. Reserve and settle are synchronous, so under one event loop no two
    coroutines can interleave inside them: the check-and-reserve is atomic.
    A call's actual cost may exceed its estimate, so spending can overshoot the
    limit by at most the in-flight calls' estimation error; no call *starts*
    once the limit is reached.
    """

    def __init__(self, max_usd: float | None = None) -> None:
        self.max_usd = max_usd
        self._spent = 0.0
        self._reserved = 0.0
        self._in_flight = 0

    @property
    def spent(self) -> float:
        return self._spent

    @property
    def reserved(self) -> float:
        return self._reserved

    def reserve(self, estimated_usd: float) -> Reservation:
        if self.max_usd is not None and self._spent + self._reserved + estimated_usd > self.max_usd:
            raise BudgetExceeded(
                f"judge budget of ${self.max_usd:.6f} reached: spent ${self._spent:.6f}, "
                f"in flight ${self._reserved:.6f}, next call estimated ${estimated_usd:.6f}"
            )
        self._reserved += estimated_usd
        self._in_flight += 1
        return Reservation(estimated_usd)

    def settle(self, reservation: Reservation, actual_usd: float) -> None:
        if reservation.settled:
            raise ValueError("reservation already settled")
        reservation.settled = True
        self._in_flight -= 1
        # Reset when idle so float residue from += / -= never accumulates.
        self._reserved = self._reserved - reservation.amount_usd if self._in_flight else 0.0
        self._spent += actual_usd
