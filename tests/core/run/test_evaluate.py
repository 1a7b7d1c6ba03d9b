"""The evaluation loop: case failures, budget aborts, and judge work overlapping adapter work."""

from __future__ import annotations

import asyncio
import importlib
import json
from dataclasses import replace

import pytest

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.interruption import Interruption
from ragproof_core.judge.types import BudgetExceeded, JudgeVerdict
from ragproof_core.metrics.registry import METRIC_NAMES, REGISTRY, Registry
from ragproof_core.metrics.retrieval import SCORED_RETRIEVAL
from ragproof_core.metrics.spec import MetricGroup, MetricSpec
from ragproof_core.model import Case, CaseKind, MetricResult, Status
from ragproof_core.run.evaluate import (
    ABORTED_BUDGET,
    BUDGET_REASON,
    COMPLETED,
    INTERRUPTED,
    evaluate,
)
from tests.conftest import FIXTURES


class ScriptedAdapter:
    """Answers with a fixed text; raises for ids starting with 'boom'."""

    def __init__(self):
        self.started: list[str] = []

    async def retrieve(self, question: str):
        return [{"id": "d1", "text": "Paris is the capital of France."}]

    async def answer(self, question: str):
        self.started.append(question)
        if question.startswith("boom"):
            raise RuntimeError("upstream exploded")
        await asyncio.sleep(0.01)
        return {"text": "Paris.", "citations": ["d1"]}


class CountingJudge:
    """Our own Judge protocol, answering every prompt validly; optionally out of budget."""

    model = "scripted"
    prompt_hashes = {"groundedness": "h"}

    def __init__(self, budget_calls: int | None = None, log: list[str] | None = None):
        self.calls = 0
        self.budget_calls = budget_calls
        self.log = log

    async def ask(self, prompt, inputs):
        if self.budget_calls is not None and self.calls >= self.budget_calls:
            raise BudgetExceeded("over")
        self.calls += 1
        if self.log is not None:
            self.log.append(f"judge:{prompt}")
        await asyncio.sleep(0)
        data = {
            "groundedness": {"claims": [{"claim": "Paris.", "supported": True}]},
            "citation_support": {"verdicts": [{"chunk_id": "d1", "supported": True}]},
            "answer_relevance": {"verdict": "relevant"},
            "completeness": {"verdict": "partial"},
            "refusal": {"refused": False},
            "context_relevance": {"verdicts": [{"chunk_id": "d1", "relevance": "relevant"}]},
        }[prompt]
        return JudgeVerdict(ok=True, data=data, raw="{}")


def _cases(*ids: str) -> list[Case]:
    return [Case(i, i, CaseKind.QA, ("d1",), "Paris.") for i in ids]


def test_a_case_failure_is_an_error_in_every_metric_and_the_run_goes_on():
    evaluation = asyncio.run(
        evaluate(_cases("ok1", "boom", "ok2"), ScriptedAdapter(), RunSettings())
    )
    assert evaluation.status == COMPLETED
    assert [o.case_id for o in evaluation.outputs] == ["ok1", "boom", "ok2"]
    failed = [r for r in evaluation.results if r.case_id == "boom"]
    assert [r.metric for r in failed] == list(METRIC_NAMES)
    assert {(r.status, r.reason) for r in failed} == {
        (Status.ERROR, "RuntimeError: upstream exploded (in answer())")
    }
    ok = [r for r in evaluation.results if r.case_id == "ok1"]
    assert [r.metric for r in ok] == list(METRIC_NAMES)  # every metric, in spec order
    assert evaluation.case_failures == 1


def test_judge_metrics_score_through_the_judge():
    judge = CountingJudge()
    evaluation = asyncio.run(evaluate(_cases("a"), ScriptedAdapter(), RunSettings(), judge))
    values = {r.metric: r.value for r in evaluation.results}
    assert values["generation.groundedness"] == 1.0
    assert values["generation.citation_support"] == 1.0
    assert values["generation.completeness"] == 0.5
    assert values["robustness.overrefusal"] == 0.0
    assert values["retrieval.context_relevance"] == 1.0
    assert values["retrieval.judged_ndcg_at_k"] == 1.0
    # One call feeds both judged retrieval metrics: 5 generation/refusal questions + 1.
    assert judge.calls == 6


def test_a_budget_breach_stops_the_run_and_keeps_what_was_scored():
    judge = CountingJudge(budget_calls=7)
    settings = RunSettings(concurrency=1)
    evaluation = asyncio.run(
        evaluate(_cases(*(f"c{i}" for i in range(10))), ScriptedAdapter(), settings, judge)
    )
    assert evaluation.status == ABORTED_BUDGET
    # One case in flight at a time, judge replies at once: the schedule is fixed. c0's six
    # questions (five plus context relevance) and c1's first fit the budget of seven; c1's
    # second breaches it while c2's adapter call is already running, and no case after c2
    # starts.
    assert [o.case_id for o in evaluation.outputs] == ["c0", "c1", "c2"]
    assert judge.calls == 7
    judged = ("groundedness", "citation_support", "answer_relevance", "completeness")
    asked = [f"generation.{name}" for name in judged] + ["robustness.overrefusal"]
    scored = {(r.case_id, r.metric) for r in evaluation.results if r.status is Status.SCORED}
    assert sorted(pair for pair in scored if pair[1] in asked) == sorted(
        [("c0", metric) for metric in asked] + [("c1", "generation.groundedness")]
    )
    budget_skips = [r for r in evaluation.results if r.reason == BUDGET_REASON]
    assert {r.status for r in budget_skips} == {Status.SKIPPED}
    context = ["retrieval.context_relevance", "retrieval.judged_ndcg_at_k"]
    assert sorted((r.case_id, r.metric) for r in budget_skips) == sorted(
        [("c1", metric) for metric in [*asked, *context] if metric != "generation.groundedness"]
        + [("c2", metric) for metric in [*asked, *context]]
    )
    # Deterministic metrics of every evaluated case are kept.
    assert all(
        any(
            r.case_id == o.case_id and r.metric == "retrieval.mrr" and r.value == 1.0
            for r in evaluation.results
        )
        for o in evaluation.outputs
    )


class SignalledJudge(CountingJudge):
    """Checks the run's interruption before each question, as ``LiteLLMJudge.request``
    does before each request; the signal comes after ``signal_after`` questions."""

    def __init__(self, signal_after: int) -> None:
        super().__init__()
        self.signal_after = signal_after
        self.interruption = Interruption(lambda: self.calls >= self.signal_after)

    async def ask(self, prompt, inputs):
        self.interruption.check()
        return await super().ask(prompt, inputs)


def test_an_interrupted_run_keeps_the_cases_judged_whole_and_asks_nothing_after_the_signal():
    # Six questions a case, one case at a time: the signal comes mid-way through c1's.
    judge = SignalledJudge(signal_after=8)
    evaluation = asyncio.run(
        evaluate(
            _cases(*(f"c{i}" for i in range(6))),
            ScriptedAdapter(),
            RunSettings(concurrency=1),
            judge,
            interruption=judge.interruption,
        )
    )
    assert evaluation.status == INTERRUPTED
    assert judge.calls == 8  # none after the signal
    assert [o.case_id for o in evaluation.outputs] == ["c0"]
    assert {r.case_id for r in evaluation.results} == {"c0"}
    assert len(evaluation.results) == len(METRIC_NAMES)


def test_judge_work_starts_before_the_adapter_has_finished_every_case():
    log: list[str] = []

    class LoggingAdapter(ScriptedAdapter):
        async def answer(self, question):
            log.append(f"adapter:{question}")
            return await super().answer(question)

    asyncio.run(
        evaluate(
            _cases(*(f"c{i}" for i in range(6))),
            LoggingAdapter(),
            RunSettings(concurrency=2),
            CountingJudge(log=log),
        )
    )
    first_judge = next(i for i, e in enumerate(log) if e.startswith("judge:"))
    last_adapter = max(i for i, e in enumerate(log) if e.startswith("adapter:"))
    assert first_judge < last_adapter


def test_an_internal_scoring_error_is_that_cases_error_and_the_run_goes_on():
    class BrokenJudge(CountingJudge):
        async def ask(self, prompt, inputs):
            if "bad" in inputs.get("question", ""):
                raise KeyError("bug")
            return await super().ask(prompt, inputs)

    evaluation = asyncio.run(
        evaluate(_cases("good", "bad"), ScriptedAdapter(), RunSettings(), BrokenJudge())
    )
    assert evaluation.status == COMPLETED
    bad = [r for r in evaluation.results if r.case_id == "bad"]
    assert {(r.status, r.reason) for r in bad} == {
        (Status.ERROR, "internal error while scoring: KeyError: 'bug'")
    }
    good = [r for r in evaluation.results if r.case_id == "good"]
    assert {r.status for r in good} == {Status.SCORED, Status.SKIPPED}


def test_unselected_metrics_are_neither_scored_nor_asked_nor_recorded():
    log: list[str] = []
    judge = CountingJudge(log=log)
    settings = RunSettings(metrics=("retrieval.mrr", "generation.answer_relevance"))
    evaluation = asyncio.run(evaluate(_cases("ok1", "boom"), ScriptedAdapter(), settings, judge))
    assert [(r.case_id, r.metric, r.status) for r in evaluation.results] == [
        ("ok1", "retrieval.mrr", Status.SCORED),
        ("ok1", "generation.answer_relevance", Status.SCORED),
        ("boom", "retrieval.mrr", Status.ERROR),
        ("boom", "generation.answer_relevance", Status.ERROR),
    ]
    assert log == ["judge:answer_relevance"]


@pytest.mark.parametrize(("concurrency", "answered"), [(1, 5), (2, 10)])
def test_a_stalled_judge_holds_the_adapter_to_the_backlog_bound(concurrency, answered):
    # _JUDGE_BACKLOG_PER_SLOT = 4: four cases per slot may wait for the judge; one more per
    # slot finishes its adapter call and waits for room. Then the adapter waits too.
    class GatedJudge(CountingJudge):
        def __init__(self):
            super().__init__()
            self.gate = asyncio.Event()

        async def ask(self, prompt, inputs):
            await self.gate.wait()
            return await super().ask(prompt, inputs)

    calls = []

    class CountingAdapter(ScriptedAdapter):
        async def answer(self, question):
            calls.append(question)
            return {"text": "Paris.", "citations": ["d1"]}

    async def main():
        judge = GatedJudge()
        cases = _cases(*(f"c{i}" for i in range(40)))
        task = asyncio.create_task(
            evaluate(cases, CountingAdapter(), RunSettings(concurrency=concurrency), judge)
        )
        for _ in range(30):  # ample time for the adapter to run ahead, were it free to
            await asyncio.sleep(0.01)
        stalled = len(calls)
        judge.gate.set()
        return stalled, await task

    stalled, evaluation = asyncio.run(main())
    assert stalled == answered
    assert len(calls) == 40 and evaluation.status == COMPLETED
    assert len(evaluation.outputs) == 40


class RankingAdapter:
    """Retrieves, per question, the ids the question lists after 'q:' (none: nothing)."""

    async def retrieve(self, question: str):
        if question.startswith("boom"):
            raise RuntimeError("upstream exploded")
        ids = question.removeprefix("q:").split(",") if question.startswith("q:") else []
        return [{"id": doc, "text": ""} for doc in ids if doc]

    async def answer(self, question: str):
        return {"text": "An answer."}


# The module, not the function ragproof_core.run exports under its name.
evaluate_module = importlib.import_module("ragproof_core.run.evaluate")


def _case_by_case(registry: Registry) -> Registry:
    """``registry`` with every group scored case by case (no ``score_batch``)."""
    return Registry(
        tuple(
            m if m.group is None else replace(m, group=replace(m.group, score_batch=None))
            for m in registry.metrics
        )
    )


# Retrieval alone (its batch rows are a case's only rows), and beside per-case metrics.
@pytest.mark.parametrize(
    "others", [(), ("retrieval.hop_*", "generation.citation_validity")], ids=["alone", "beside"]
)
def test_rows_scored_in_batches_equal_case_by_case_rows_in_order(monkeypatch, others):
    # Batches of 3 over 8 cases: full batches, a last short one, failures between them.
    monkeypatch.setattr(evaluate_module, "SCORE_BATCH_CASES", 3)
    rankings = ["a,b,a", "x", "boom", "", "b,c,a,a", "c", "boom", "a"]
    cases = [
        Case(f"c{i}", ranking if ranking == "boom" else f"q:{ranking}", expected_source_ids=ids)
        for i, (ranking, ids) in enumerate(
            zip(rankings, [("a",), ("a", "c"), ("a",), ("b",), (), None, ("a",), ()], strict=True)
        )
    ]
    # A graded case among them, grade 0 included.
    cases[4] = replace(
        cases[4], expected_source_ids=("a", "z"), source_grades={"a": 2, "c": 0, "z": 1}
    )
    # Cut-offs given before the metrics they cut, as a user may write them.
    settings = RunSettings(
        metrics=("retrieval.ndcg_at_k@2", "retrieval.recall_at_k@1", *SCORED_RETRIEVAL, *others)
    )
    batched = asyncio.run(evaluate(cases, RankingAdapter(), settings))
    one_by_one = asyncio.run(
        evaluate(cases, RankingAdapter(), settings, registry=_case_by_case(REGISTRY))
    )
    assert batched.results == one_by_one.results
    assert {r.status for r in batched.results} == {Status.SCORED, Status.SKIPPED, Status.ERROR}
    assert [r.case_id for r in batched.results][:: len(batched.results) // 8] == [
        c.id for c in cases
    ]


def _probe(case, output, params, wanted):
    return [MetricResult(case.id, "probe.value", Status.SCORED, 1.0)]


def _probe_batch(cases, outputs, params, wanted):
    if any(case.id == "bad" for case in cases):
        raise ZeroDivisionError("bug")
    return [
        _probe(case, output, params, wanted) for case, output in zip(cases, outputs, strict=True)
    ]


def test_a_batch_scoring_bug_is_only_the_faulty_cases_error():
    group = MetricGroup("probe", ("probe.value",), score=_probe, score_batch=_probe_batch)
    probe = MetricSpec("probe.value", True, "never", (), "a test metric", group=group)
    registry = REGISTRY.with_metrics([probe])
    # Every default metric, the probe among them (settings select from the shipped ones).
    evaluation = asyncio.run(
        evaluate(_cases("good", "bad", "fine"), ScriptedAdapter(), RunSettings(), registry=registry)
    )
    bug = "internal error while scoring: ZeroDivisionError: bug"
    assert {r.status for r in evaluation.results if r.case_id == "bad"} == {Status.ERROR}
    assert [
        (r.case_id, r.metric, r.status, r.value, r.reason)
        for r in evaluation.results
        if r.metric in ("retrieval.mrr", "probe.value")
    ] == [
        ("good", "retrieval.mrr", Status.SCORED, 1.0, None),
        ("good", "probe.value", Status.SCORED, 1.0, None),
        ("bad", "retrieval.mrr", Status.ERROR, None, bug),
        ("bad", "probe.value", Status.ERROR, None, bug),
        ("fine", "retrieval.mrr", Status.SCORED, 1.0, None),
        ("fine", "probe.value", Status.SCORED, 1.0, None),
    ]


def test_an_evaluation_repr_stays_short_however_many_cases():
    # asyncio.run() formats its task's result when it restores the SIGINT handler.
    evaluation = asyncio.run(evaluate(_cases("a", "b", "c"), ScriptedAdapter(), RunSettings()))
    rows = 3 * len(METRIC_NAMES)
    assert repr(evaluation) == f"Evaluation(3 outputs, {rows} results, status='completed')"


def _conversation_recording(tmp_path, failed_first_turn: bool):
    recording = FIXTURES / "conversations" / "outputs.jsonl"
    if not failed_first_turn:
        return recording
    lines = [json.loads(line) for line in recording.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line["case_id"] == "c1":
            line["turns"][0] = {"error": "adapter timed out after 60s"}
    path = tmp_path / "outputs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("failed_first_turn", [False, True], ids=["replayed", "failed-turn"])
def test_conversations_without_a_judge_as_columns_equal_them_as_objects(
    tmp_path, failed_first_turn
):
    """Turns' rows from columns, each conversation's own rows right after its last turn's:
    the rows, in the order, that the object path gives."""
    cases = load_dataset(FIXTURES / "conversations" / "mixed.jsonl")
    recording = _conversation_recording(tmp_path, failed_first_turn)
    settings = RunSettings()
    as_objects = asyncio.run(evaluate(cases, RecordedAdapter(str(recording)), settings))
    as_columns = asyncio.run(
        evaluate(cases, RecordedAdapter(str(recording)), settings, as_columns=True)
    )
    assert as_columns.columns is not None and as_columns.results == []
    assert as_columns.columns.results() == as_objects.results
    conversation_rows = [r for r in as_objects.results if r.case_id in {"c1", "c2"}]
    assert {r.metric for r in conversation_rows} == set(REGISTRY.conversation_names)
