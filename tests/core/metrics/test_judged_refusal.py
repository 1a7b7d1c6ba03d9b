"""The repo's scripted judge (tests/support/judge_server.py) and the refusal heuristic
agree on the demo: abstention and over-refusal are the same judged or not."""

from __future__ import annotations

from ragproof_core.adapters.loading import load_adapter
from ragproof_core.config.settings import DEMO_ADAPTER, RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics.aggregate import summarize
from ragproof_core.run.evaluate import evaluate
from tests.core.judge.conftest import API_KEY, make_judge, run
from tests.support.cli import REPO
from tests.support.judge_server import JudgeServer

REFUSAL_METRICS = ("robustness.abstention", "robustness.overrefusal")


def _summaries(judge=None) -> dict[str, dict]:
    cases = load_dataset(REPO / "data" / "demo" / "cases.jsonl")
    settings = RunSettings(metrics=REFUSAL_METRICS)
    evaluation = run(evaluate(cases, load_adapter(DEMO_ADAPTER, {}), settings, judge))
    return {s.metric: s.to_dict() for s in summarize(evaluation.results, REFUSAL_METRICS)}


def test_the_demo_scores_abstention_and_overrefusal_alike_judged_and_by_heuristic(monkeypatch):
    heuristic = _summaries()
    # The demo abstains in its own words ("I could not find this in the documents.").
    assert heuristic["robustness.abstention"]["mean"] > 0.7
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    with JudgeServer() as server:
        judged = _summaries(make_judge(server.url))
        asked = server.request_count
    # Every verdict was the judge's: one refusal question per scored case.
    assert asked == sum(s["scored"] for s in judged.values()) == 65
    assert judged == heuristic
