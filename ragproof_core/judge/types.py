"""The judge's boundary types, shared by the judge metrics, robustness and calibration.

A metric never talks to LiteLLM directly: it asks a ``Judge`` for a verdict on
one prompt with named inputs and gets a ``JudgeVerdict`` back. Everything
about caching, cost, budget, transport retries and the single repair retry
lives behind ``Judge.ask``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class BudgetExceeded(Exception):
    """Raised by ``Judge.ask`` *before* a call that the budget no longer allows.

    The pipeline catches it, stops starting new work and finishes the run with
    status ``aborted:budget``.
    """


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """The outcome of one logical judge question (up to 2 validated attempts).

    ``ok``: the reply validated; ``data`` is the parsed JSON object.
    Otherwise ``error`` says why (validation failed twice, or the transport
    failed after its retries) and the metric becomes ``judge_error``.
    ``raw`` is the judge's last reply text verbatim (None if none arrived).
    """

    ok: bool
    data: dict[str, Any] | None
    raw: str | None
    error: str | None = None
    cost_usd: float = 0.0
    cached: bool = False
    requests: int = 0


class Judge(Protocol):
    model: str

    @property
    def prompt_hashes(self) -> dict[str, str]: ...

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict: ...
