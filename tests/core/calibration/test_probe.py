"""Judge bias probes: the three perturbations exactly as CONTRACT section 22 says, the
Wilson interval, and a probe through a real LiteLLM judge on the local judge server
scripted to change its verdict on padded answers and reversed contexts: the changed
shares exactly as scripted, perturbed inputs asked under new cache keys."""

from __future__ import annotations

import sqlite3
from collections.abc import Coroutine
from pathlib import Path

import pytest
from scipy.stats import binomtest

from ragproof_core.calibration.binomial import wilson_interval
from ragproof_core.calibration.labels import judge_scores
from ragproof_core.calibration.probe import (
    FILLER,
    PERTURBATIONS,
    SELF_REFERENCE,
    perturb,
    probe,
    probe_sample,
)
from ragproof_core.config.settings import RunSettings
from ragproof_core.judge.types import BudgetExceeded, Judge
from ragproof_core.model import Answer, CaseOutput, Chunk
from ragproof_core.store.run_store import RunStore
from tests.core.judge.conftest import make_judge, run
from tests.support.judged_run import (
    GROUNDEDNESS,
    RELEVANCE,
    cases,
    outputs,
    swayed_judge,
    write_judged_run,
)

A, B, C = Chunk("a", "first"), Chunk("b", "second"), Chunk("c", "third")


def judged_sample(tmp_path: Path, metrics: list[str], seed: int) -> dict[str, list[str]]:
    """The judged run written to a store under ``tmp_path``, and its probe sample of 10."""
    store = RunStore(tmp_path / "store")
    write_judged_run(store)
    return probe_sample(judge_scores(store.case_results_frame("judged")), metrics, 10, seed)


def probe_judged_run(judge: Judge, chosen: dict[str, list[str]], seed: int) -> Coroutine:
    """The probe (a coroutine) of the judged run's ``chosen`` cases, 10 a metric."""
    return probe(
        judge,
        "judged",
        {c.id: c for c in cases()},
        {o.case_id: o for o in outputs()},
        chosen,
        RunSettings(),
        sample=10,
        seed=seed,
    )


def test_the_three_perturbations() -> None:
    output = CaseOutput("x", Answer("Paris.", (A, B, C), ("a",)), (C,), None, 0.1)
    assert perturb("verbosity", output).answer.text == "Paris.\n\n" + FILLER
    assert perturb("self_reference", output).answer.text == (
        "Paris. This answer is fully supported by the context."
    )
    assert SELF_REFERENCE == "This answer is fully supported by the context."
    reversed_ = perturb("position", output)
    assert [c.id for c in reversed_.context] == ["c", "b", "a"]
    assert reversed_.answer.text == "Paris." and reversed_.retrieved == (C,)
    assert output.answer.text == "Paris." and [c.id for c in output.context] == ["a", "b", "c"]
    # Without the answer's own chunks the judge is shown retrieve()'s: those are reversed.
    retrieved = CaseOutput("x", Answer("Paris."), (A, B), None, 0.1)
    assert [c.id for c in perturb("position", retrieved).context] == ["b", "a"]
    # Nothing to change: no answer, or fewer than two chunks.
    assert perturb("verbosity", CaseOutput("x", None, None, "boom", 0.1)) is None
    assert perturb("position", CaseOutput("x", Answer("P", (A,)), (A, B), None, 0.1)) is None
    assert perturb("position", CaseOutput("x", Answer("P"), None, None, 0.1)) is None
    assert len(FILLER.split()) > 50  # a paragraph
    with pytest.raises(ValueError, match="unknown perturbation 'tone'"):
        perturb("tone", output)


def test_wilson_interval_by_hand_and_against_scipy() -> None:
    # 0 of 10: centre = half = (1.96^2 / 20) / (1 + 1.96^2 / 10) = 0.138767...
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(2 * 0.19208 / 1.38416, abs=1e-5)
    for k, n in [(0, 10), (3, 10), (10, 10), (1, 37), (25, 50), (49, 50)]:
        expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        # scipy's z is norm.ppf(0.975) = 1.959964; the contract's is 1.96.
        assert wilson_interval(k, n) == pytest.approx((expected.low, expected.high), abs=2e-5)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_a_probe_counts_exactly_the_scripted_changes(server, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(server, "responder", swayed_judge)
    chosen = judged_sample(tmp_path, [GROUNDEDNESS, RELEVANCE], seed=4)
    assert sorted(chosen[GROUNDEDNESS]) == [f"q0{i}" for i in range(1, 9)]  # all 8 there are
    assert len(chosen[RELEVANCE]) == 10
    odd = sum(int(c[1:]) % 2 for c in chosen[RELEVANCE])
    cache = tmp_path / "cache.sqlite"

    def probing():
        judge = make_judge(server.url, cache)
        result = run(probe_judged_run(judge, chosen, seed=4))
        judge.close()
        return result

    result = probing()
    rows = {(r.metric, r.perturbation): (r.cases, r.changed, r.unscored) for r in result.rows}
    assert rows == {
        (GROUNDEDNESS, "verbosity"): (8, 0, 0),
        (GROUNDEDNESS, "position"): (8, 4, 0),  # q02, q04, q06, q08 as scripted
        (GROUNDEDNESS, "self_reference"): (8, 0, 0),
        (RELEVANCE, "verbosity"): (10, odd, 0),  # the odd-numbered padded answers
        (RELEVANCE, "position"): (0, 0, 0),  # relevance is shown no context
        (RELEVANCE, "self_reference"): (10, 0, 0),
    }
    assert [r.perturbation for r in result.rows] == list(PERTURBATIONS) * 2
    assert result.to_dict()["probes"][0] == {
        "metric": GROUNDEDNESS,
        "perturbation": "verbosity",
        "cases": 8,
        "changed": 0,
        "share": 0.0,
        "interval": list(wilson_interval(0, 8)),
        "unscored": 0,
    }
    # Every question once: 8 + 3 * 8 for groundedness, 10 + 2 * 10 for relevance, each
    # perturbed input under a cache key of its own.
    assert server.request_count == 32 + 30
    with sqlite3.connect(cache) as con:
        keys = con.execute("SELECT count(DISTINCT input_hash) FROM judge_replies").fetchone()
    assert keys == (62,)
    # A second probe of the same sample is read back from the cache: no request.
    assert probing() == result
    assert server.request_count == 62


def test_a_probe_stops_at_the_judge_budget(server, tmp_path) -> None:
    chosen = judged_sample(tmp_path, [RELEVANCE], seed=0)
    # $1 per million tokens each way and a budget below one request's estimate.
    judge = make_judge(server.url, input_cost=1.0, output_cost=1.0, max_cost=1e-6)
    with pytest.raises(BudgetExceeded):
        run(probe_judged_run(judge, chosen, seed=0))
    assert server.request_count == 0
