"""What the two dry runs share (``run --dry-run`` in ``run/dry_run.py`` and ``generate qa
--dry-run`` in ``generate/estimate.py``): the tally their estimating judge keeps
and the closing lines of their summary, cost and budget.

Each dry run runs the real loop against an *estimating* judge that stands in for
the configured one: it counts every question, how many the cache would serve,
and prices the rest, never calling the judge.
"""

from __future__ import annotations

from typing import Any

from ragproof_core.judge.cost import RequestEstimate
from ragproof_core.judge.pricing import UNKNOWN_COST
from ragproof_core.model import Chunk

# What an estimate assumes where it cannot know the answers (an adapter a dry run must
# not call; ``judge check``'s one groundedness request of typical size): a few sentences
# of answer citing two of five retrieved passages of a paragraph each.
ASSUMED_ANSWER = "x" * 600
ASSUMED_CONTEXT = tuple(Chunk(id=f"assumed-{i}", text="x" * 800) for i in range(5))
ASSUMED_CITATIONS = ("assumed-0", "assumed-1")


class EstimatingJudge:
    """Base of the estimating judges: the wrapped judge and the running tally.

    Subclasses implement ``ask`` (and ``ask_combined`` where the loop uses it),
    adding each question's estimate (``count``).
    """

    def __init__(self, judge: Any) -> None:
        self._judge = judge
        self.model = judge.model
        self.questions = 0
        self.cached = 0
        self.cost_usd = 0.0
        # Estimated tokens of the requests to send (none for a cached question).
        self.input_tokens = 0
        self.output_tokens = 0

    def count(self, estimate: RequestEstimate) -> None:
        """Add one question: served from the cache, or a request to send."""
        self.questions += 1
        self.cached += estimate.cached
        self.cost_usd += estimate.cost_usd
        self.input_tokens += estimate.input_tokens
        self.output_tokens += estimate.output_tokens

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return self._judge.prompt_hashes

    @property
    def calls(self) -> int:
        """Questions the cache would not serve: the requests the run would send."""
        return self.questions - self.cached


def cost_lines(estimated_cost_usd: float | None, max_cost_usd: float | None) -> list[str]:
    """The estimate's cost line and, with a budget set, whether the estimate fits it.

    ``None`` is a judge nothing prices; a budget is refused before that can happen.
    """
    if estimated_cost_usd is None:
        return [f"  estimated {UNKNOWN_COST}"]
    lines = [f"  estimated cost ${estimated_cost_usd:.4f}"]
    if max_cost_usd is not None:
        within = "within" if estimated_cost_usd <= max_cost_usd else "OVER"
        lines.append(f"  budget RAGPROOF_MAX_COST_USD ${max_cost_usd:.4f}: {within}")
    return lines
