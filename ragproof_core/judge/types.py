"""The judge's boundary types, shared by the judge metrics, robustness and calibration.

A metric never talks to LiteLLM directly: it asks a ``Judge`` for a verdict on
one prompt with named inputs and gets a ``JudgeVerdict`` back. Everything
about caching, cost, budget, transport retries and the single repair retry
lives behind ``Judge.ask``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

ABORTED_BUDGET = "aborted:budget"
ABORTED_JUDGE = "aborted:judge"


class JudgeStopped(Exception):
    """The judge answers no more questions in this run, raised by ``Judge.ask``
    *before* a request it will not send. The pipeline catches it, stops starting
    new work and finishes the run with ``status``, every question it did not ask
    skipped with ``skip_reason``."""

    status: str = ""
    skip_reason: str = ""


class BudgetExceeded(JudgeStopped):
    """The next call would pass the budget (RAGPROOF_MAX_COST_USD): ``aborted:budget``."""

    status = ABORTED_BUDGET
    skip_reason = "not judged: the run stopped at its judge budget (RAGPROOF_MAX_COST_USD)"


class JudgeUnavailable(JudgeStopped):
    """The judge cannot work (``breaker.py``): ``aborted:judge``; the message is the
    provider's reason."""

    status = ABORTED_JUDGE
    skip_reason = "not judged: the run stopped calling a judge that could not answer"


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
