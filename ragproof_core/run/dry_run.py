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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragproof_core.adapters.loading import load_adapter
from ragproof_core.adapters.runner import (
    adapter_calls_dict,
    adapter_calls_line,
    close_adapter,
    planned_calls,
    takes_history,
)
from ragproof_core.config.expansion import expanded
from ragproof_core.config.settings import Config
from ragproof_core.judge.combined import COMBINED, combined_inputs
from ragproof_core.judge.cost import CACHED_REQUEST
from ragproof_core.judge.estimating import (
    ASSUMED_ANSWER,
    ASSUMED_CITATIONS,
    ASSUMED_CONTEXT,
    EstimatingJudge,
    cost_lines,
)
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.repeats import single_judges
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.judge.types import JudgeVerdict
from ragproof_core.metrics.custom import give_rubrics, run_registry
from ragproof_core.model import Answer, Case, CaseOutput
from ragproof_core.run.evaluate import Selection, evaluate


@dataclass(frozen=True)
class DryRunEstimate:
    """What a run would ask the judge: ``requests`` questions, ``cached_requests`` of
    them served free from the judge cache, ``requests_to_send`` sent; the tokens and
    cost are those of the requests to send (CONTRACT section 24)."""

    cases: int
    judge_model: str | None
    basis: str
    requests: int
    cached_requests: int
    requests_to_send: int
    estimated_input_tokens: int
    estimated_output_tokens: int
    estimated_cost_usd: float | None  # None: nothing prices the judge
    max_cost_usd: float | None
    # The calls the run would make of its adapter, by method (CONTRACT section 2).
    adapter_calls: dict[str, int] = field(default_factory=dict)
    # Trials per case (CONTRACT section 27): the requests and calls count every trial.
    trials: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        calls = adapter_calls_line(self.adapter_calls)
        would = [] if calls is None else [f"  {calls} would be made"]
        cases = f"{self.cases} cases" + (f" x {self.trials} trials" if self.trials > 1 else "")
        if self.judge_model is None:
            return "\n".join(
                [
                    f"dry run: {cases}; no judge configured (RAGPROOF_JUDGE_MODEL), "
                    "so 0 judge calls and $0; judge metrics would be skipped",
                    *would,
                ]
            )
        lines = [
            f"dry run: {cases}, judge {self.judge_model} ({self.basis})",
            *would,
            f"  judge requests {self.requests}: cached {self.cached_requests}, "
            f"to send {self.requests_to_send} (plus up to one repair retry each)",
            f"  estimated tokens to send {self.estimated_input_tokens} in / "
            f"{self.estimated_output_tokens} out",
            *cost_lines(self.estimated_cost_usd, self.max_cost_usd),
        ]
        return "\n".join(lines)


class _EstimatingJudge(EstimatingJudge):
    """Answers nothing: counts each question, looks it up in the cache, prices the rest.

    ``shared``: a question asked again in the run (a later trial with the same answer,
    CONTRACT section 27) is served by the first one's reply, so it counts as cached."""

    def __init__(self, judge, shared: bool = False) -> None:
        super().__init__(judge)
        self.mode = judge.mode
        self._shared = shared
        self._asked: set[tuple[str, str, str]] = set()

    def _count(self, judge, prompt: str, inputs: dict[str, Any], estimate) -> None:
        key = (judge.model, prompt, judge.cache_key(inputs))
        if self._shared and key in self._asked:
            estimate = CACHED_REQUEST
        self._asked.add(key)
        self.count(estimate)

    async def ask(self, prompt: str, inputs: dict[str, Any]) -> JudgeVerdict:
        # A jury asks every model, judge repeats every repeat: each request is counted
        # (and looked up in the cache) apart.
        for judge in single_judges(self._judge):
            self._count(judge, prompt, inputs, judge.estimate(prompt, inputs))
        return JudgeVerdict(ok=False, data=None, raw=None, error="dry run: not asked")

    async def ask_combined(self, parts: dict[str, dict[str, Any]]) -> dict[str, JudgeVerdict]:
        """Combined mode: one question per case, whatever its number of parts."""
        for judge in single_judges(self._judge):
            inputs = combined_inputs(parts, judge.prompts)
            self._count(judge, COMBINED, inputs, judge.estimate_combined(parts))
        return {
            name: JudgeVerdict(ok=False, data=None, raw=None, error="dry run: not asked")
            for name in parts
        }


class _AssumedAnswers:
    """Stands in for an adapter that must not be called."""

    async def run_case(self, case: Case) -> CaseOutput:
        answer = Answer(ASSUMED_ANSWER, ASSUMED_CONTEXT, ASSUMED_CITATIONS)
        return CaseOutput(case.id, answer=answer, retrieved=ASSUMED_CONTEXT)


class _AssumedConversationalAnswers(_AssumedAnswers):
    """Stands in for an adapter that takes ``history``: its conversations run turn by
    turn, so each turn's questions and each conversation's own are counted."""

    async def run_case(self, case: Case, history: list | None = None) -> CaseOutput:
        return await super().run_case(case)


async def estimate_run(
    cases: Sequence[Case], config: Config, env: JudgeEnv, cache_path: Path
) -> DryRunEstimate:
    registry = run_registry(config.metrics)
    # The cache is read, never written (nor created, when the store has none yet).
    judge = make_judge(env, cache_path if cache_path.exists() else None, read_only=True)
    if judge is None:
        calls = await _planned_calls(cases, config, registry)
        return DryRunEstimate(
            len(cases),
            None,
            "no judge",
            0,
            0,
            0,
            0,
            0,
            0.0,
            env.max_cost_usd,
            calls,
            config.run.repeats,
        )
    # The config's own metrics: a rubric's questions are counted like any judge metric's.
    give_rubrics(judge, config.metrics)
    adapter = _load_adapter(config)
    free = getattr(adapter, "free_to_call", False)
    # A free adapter's trials are run as the run would: a trial answering as an earlier
    # one did asks nothing new. Assumed answers are each trial's own (an upper bound).
    estimator = _EstimatingJudge(judge, shared=free)
    trials = config.run.repeats
    calls = _calls(adapter, cases, config, registry)
    try:
        if free:
            basis = "answers from the local adapter, cache hits exact"
            for _ in range(trials):
                await evaluate(cases, adapter, config.run, estimator, registry=registry)
        else:
            basis = "adapter not called: assumed answer sizes, no cache hits counted"
            # Conversations run as they would: turn by turn, or failing every turn.
            assumed = (
                _AssumedConversationalAnswers() if takes_history(adapter) else _AssumedAnswers()
            )
            for _ in range(trials):
                await evaluate(cases, assumed, config.run, estimator, registry=registry)
    finally:
        await close_adapter(adapter)
        judge.close()
    return DryRunEstimate(
        cases=len(cases),
        judge_model=judge.model,
        basis=basis,
        requests=estimator.questions,
        cached_requests=estimator.cached,
        requests_to_send=estimator.calls,
        estimated_input_tokens=estimator.input_tokens,
        estimated_output_tokens=estimator.output_tokens,
        estimated_cost_usd=estimator.cost_usd if judge.priced else None,
        max_cost_usd=env.max_cost_usd,
        adapter_calls=calls,
        trials=trials,
    )


def _methods(config: Config, registry) -> frozenset[str]:
    return Selection.from_settings(config.run, registry).adapter_methods


def _calls(adapter: object, cases: Sequence[Case], config: Config, registry) -> dict[str, int]:
    """The calls the run would make of ``adapter`` (never called), by method: each
    trial's (CONTRACT section 27)."""
    planned = planned_calls(adapter, cases, _methods(config, registry))
    return adapter_calls_dict({method: n * config.run.repeats for method, n in planned.items()})


def _load_adapter(config: Config) -> Any:
    """The run's adapter, built as the run would build it (``${NAME}`` read)."""
    used = expanded(config).config.adapter
    return load_adapter(used.target, used.options)


async def _planned_calls(cases: Sequence[Case], config: Config, registry) -> dict[str, int]:
    """The calls the run would make of its adapter (built, never called), by method."""
    adapter = _load_adapter(config)
    try:
        return _calls(adapter, cases, config, registry)
    finally:
        await close_adapter(adapter)
