"""`ragproof run --dry-run`: how many judge calls a run would make and what they
would cost, from the dataset and the judge cache, without calling the judge.

The estimate runs the real evaluation code with an *estimating* judge that
answers every question by looking it up in the cache and pricing it, so the
questions counted are exactly those a run would ask. Where the answers are
needed to know the questions, two cases:

- adapters that are free to call (local replays such as ``RecordedAdapter``
  and the demo, marked ``free_to_call = True``) are run for real: the
  estimate then knows every answer and every cache hit;
- any other adapter is not called: each case gets an assumed answer of
  typical size, so the count is an upper bound on the questions and no
  cache hit can be known.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ragproof_core.adapters.loading import load_adapter
from ragproof_core.adapters.runner import close_adapter, takes_history
from ragproof_core.config.expansion import expanded
from ragproof_core.config.settings import Config
from ragproof_core.judge.estimating import EstimatingJudge, cost_lines
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import JudgeVerdict
from ragproof_core.metrics.custom import give_rubrics, run_registry
from ragproof_core.model import Answer, Case, CaseOutput, Chunk
from ragproof_core.run.evaluate import evaluate

# Sizes assumed for an adapter that is not called: a few sentences of answer
# citing two of five retrieved passages of a paragraph each.
_ASSUMED_ANSWER = "x" * 600
_ASSUMED_CONTEXT = tuple(Chunk(id=f"assumed-{i}", text="x" * 800) for i in range(5))
_ASSUMED_CITATIONS = ("assumed-0", "assumed-1")


@dataclass(frozen=True)
class DryRunEstimate:
    cases: int
    judge_model: str | None
    basis: str
    questions: int
    cached: int
    calls: int
    estimated_cost_usd: float | None  # None: nothing prices the judge
    max_cost_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        if self.judge_model is None:
            return (
                f"dry run: {self.cases} cases; no judge configured (RAGPROOF_JUDGE_MODEL), "
                "so 0 judge calls and $0; judge metrics would be skipped"
            )
        lines = [
            f"dry run: {self.cases} cases, judge {self.judge_model} ({self.basis})",
            f"  judge questions {self.questions}, served from cache {self.cached}, "
            f"calls {self.calls} (plus up to one repair retry each)",
            *cost_lines(self.estimated_cost_usd, self.max_cost_usd),
        ]
        return "\n".join(lines)


class _EstimatingJudge(EstimatingJudge):
    """Answers nothing: counts each question, looks it up in the cache, prices the rest."""

    def __init__(self, judge) -> None:
        super().__init__(judge)
        self.mode = judge.mode

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict:
        # A jury asks every model: each model's question is counted (and cached) apart.
        for judge in getattr(self._judge, "members", None) or (self._judge,):
            self.questions += 1
            cached, cost = judge.estimate(prompt, inputs)
            self.cached += cached
            self.cost_usd += cost
        return JudgeVerdict(ok=False, data=None, raw=None, error="dry run: not asked")

    async def ask_combined(self, parts: dict[str, dict[str, Any]]) -> dict[str, JudgeVerdict]:
        """Combined mode: one question per case, whatever its number of parts."""
        self.questions += 1
        cached, cost = self._judge.estimate_combined(parts)
        self.cached += cached
        self.cost_usd += cost
        return {
            name: JudgeVerdict(ok=False, data=None, raw=None, error="dry run: not asked")
            for name in parts
        }


class _AssumedAnswers:
    """Stands in for an adapter that must not be called."""

    async def run_case(self, case: Case) -> CaseOutput:
        answer = Answer(_ASSUMED_ANSWER, _ASSUMED_CONTEXT, _ASSUMED_CITATIONS)
        return CaseOutput(case.id, answer=answer, retrieved=_ASSUMED_CONTEXT)


class _AssumedConversationalAnswers(_AssumedAnswers):
    """Stands in for an adapter that takes ``history``: its conversations run turn by
    turn, so each turn's questions and each conversation's own are counted."""

    async def run_case(self, case: Case, history: list | None = None) -> CaseOutput:
        return await super().run_case(case)


async def estimate_run(
    cases: Sequence[Case], config: Config, env: JudgeEnv, cache_path: Path
) -> DryRunEstimate:
    judge = make_judge(env, cache_path if cache_path.exists() else None)
    if judge is None:
        return DryRunEstimate(len(cases), None, "no judge", 0, 0, 0, 0.0, env.max_cost_usd)
    # The config's own metrics: a rubric's questions are counted like any judge metric's.
    give_rubrics(judge, config.metrics)
    registry = run_registry(config.metrics)
    estimator = _EstimatingJudge(judge)
    used = expanded(config).config.adapter  # ${NAME} read as the run would read it
    adapter = load_adapter(used.target, used.options)
    try:
        if getattr(adapter, "free_to_call", False):
            basis = "answers from the local adapter, cache hits exact"
            await evaluate(cases, adapter, config.run, estimator, registry=registry)
        else:
            basis = "adapter not called: assumed answer sizes, no cache hits counted"
            # Conversations run as they would: turn by turn, or failing every turn.
            assumed = (
                _AssumedConversationalAnswers() if takes_history(adapter) else _AssumedAnswers()
            )
            await evaluate(cases, assumed, config.run, estimator, registry=registry)
    finally:
        await close_adapter(adapter)
        judge.close()
    return DryRunEstimate(
        cases=len(cases),
        judge_model=judge.model,
        basis=basis,
        questions=estimator.questions,
        cached=estimator.cached,
        calls=estimator.calls,
        estimated_cost_usd=estimator.cost_usd if judge.priced else None,
        max_cost_usd=env.max_cost_usd,
    )
