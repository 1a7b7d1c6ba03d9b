"""Floors applied to a stored run (CONTRACT section 25): mean and every-case bounds,
min_scored, nothing scored, the failing case ids and their order, exact lines."""

from __future__ import annotations

import pytest

from ragproof_core.compare.floors import (
    MAX_FAILING_IDS,
    NoFloors,
    broken,
    check_floors,
    floors_for,
    required_floors,
)
from ragproof_core.config.gate import Floor
from ragproof_core.metrics.aggregate import summarize
from ragproof_core.model import MetricResult, scored, skipped
from ragproof_core.store.run_store import RunStore

INJECTION = "robustness.injection_resistance"
RECALL = "retrieval.recall_at_k"
MRR = "retrieval.mrr"
OVERREFUSAL = "robustness.overrefusal"
GROUNDEDNESS = "generation.groundedness"


def _results() -> list[MetricResult]:
    out = []
    # Twelve injection cases, two of them obeyed (i3 and i7).
    out += [scored(f"i{n:02d}", INJECTION, 0.0 if n in (3, 7) else 1.0) for n in range(12)]
    # Ten recalls of 0.8: their float mean is 0.7999999999999999.
    out += [scored(f"r{n}", RECALL, 0.8) for n in range(10)]
    # Thirteen cases of MRR, all below 0.5; the lowest are m12 (0.0) and m11 (0.1).
    out += [scored(f"m{n:02d}", MRR, 0.2) for n in range(11)]
    out += [scored("m11", MRR, 0.1), scored("m12", MRR, 0.0)]
    out += [scored("o1", OVERREFUSAL, 0.0), scored("o2", OVERREFUSAL, 1.0)]
    out += [skipped(f"g{n}", GROUNDEDNESS, "no judge configured") for n in range(3)]
    return out


@pytest.fixture
def store(tmp_path) -> RunStore:
    store = RunStore(tmp_path / "store")
    results = _results()
    store.write_manifest("r1", {"run_id": "r1"})
    store.write_case_results("r1", results)
    store.write_summaries(
        "r1", summarize(results, [INJECTION, RECALL, MRR, OVERREFUSAL, GROUNDEDNESS])
    )
    return store


def _one(store: RunStore, floor: Floor):
    (result,) = check_floors(store, "r1", [floor])
    return result


def test_mean_floors_pass_and_fail_with_their_figures(store):
    mean_float = sum([0.8] * 10) / 10
    assert mean_float < 0.8  # what the slack is for
    recall = _one(store, Floor(RECALL, min=0.8))
    assert (recall.passed, recall.scored) == (True, 10)
    assert recall.line() == f"PASS  {RECALL}  mean >= 0.8  0.8000 over 10 scored"
    over = _one(store, Floor(OVERREFUSAL, max=0.1))
    assert (over.passed, over.value) == (False, 0.5)
    assert over.line() == f"FAIL  {OVERREFUSAL}  mean <= 0.1  0.5000 over 2 scored"
    both = _one(store, Floor(OVERREFUSAL, min=0.4, max=0.6))
    assert both.passed and both.floor.bound == "0.4 <= mean <= 0.6"


def test_every_case_floor_names_the_failing_cases_worst_first(store):
    injection = _one(store, Floor(INJECTION, min=1.0, every_case=True))
    assert (injection.passed, injection.scored, injection.value) == (False, 12, 0.0)
    assert (injection.failing, injection.failing_ids) == (2, ("i03", "i07"))
    assert injection.line() == (
        f"FAIL  {INJECTION}  every case >= 1  worst 0.0000 of 12 scored; 2 failing: i03, i07"
    )
    # The mean alone (10/12) would clear a min of 0.8: only the every-case floor sees i03.
    assert _one(store, Floor(INJECTION, min=0.8)).passed


def test_at_most_ten_failing_ids_are_listed_lowest_first(store):
    mrr = _one(store, Floor(MRR, min=0.5, every_case=True))
    assert mrr.failing == 13 and len(mrr.failing_ids) == MAX_FAILING_IDS == 10
    assert mrr.failing_ids[:3] == ("m12", "m11", "m00")
    assert mrr.line().endswith(
        "13 failing: m12, m11, m00, m01, m02, m03, m04, m05, m06, m07 and 3 more"
    )
    above = _one(store, Floor(MRR, max=0.15, every_case=True))
    assert above.failing_ids[0] == "m00" and above.value == pytest.approx(0.2)
    # Both bounds: the case furthest outside either is first.
    band = _one(store, Floor(MRR, min=0.1, max=0.15, every_case=True))
    assert (band.failing, band.failing_ids[0], band.value) == (12, "m12", 0.0)


def test_min_scored_and_nothing_scored_fail(store):
    few = _one(store, Floor(OVERREFUSAL, max=1.0, min_scored=5))
    assert not few.passed
    assert few.line() == (
        f"FAIL  {OVERREFUSAL}  mean <= 1  0.5000 over 2 scored; only 2 scored, min_scored is 5"
    )
    few_cases = _one(store, Floor(INJECTION, min=0.0, every_case=True, min_scored=50))
    assert not few_cases.passed and few_cases.failing == 0
    nothing = _one(store, Floor(GROUNDEDNESS, min=0.8))
    assert (nothing.passed, nothing.value, nothing.scored) == (False, None, 0)
    assert nothing.line() == f"FAIL  {GROUNDEDNESS}  mean >= 0.8  nothing scored"
    every = _one(store, Floor(GROUNDEDNESS, min=0.8, every_case=True))
    assert every.line() == f"FAIL  {GROUNDEDNESS}  every case >= 0.8  nothing scored"
    # A metric the run has no row of at all scored nothing too.
    absent = _one(store, Floor("generation.completeness", min=0.5))
    assert absent.line().endswith("nothing scored") and not absent.passed
    # Only an explicit min_scored = 0 lets nothing pass.
    allowed = _one(store, Floor(GROUNDEDNESS, min=0.8, min_scored=0))
    assert allowed.passed and allowed.line().endswith("nothing scored (min_scored is 0)")


def test_results_keep_the_floor_order_and_broken_picks_the_failures(store):
    floors = [Floor(RECALL, min=0.5), Floor(INJECTION, min=1.0, every_case=True)]
    results = check_floors(store, "r1", floors)
    assert [r.metric for r in results] == [RECALL, INJECTION]
    assert [r.metric for r in broken(results)] == [INJECTION]
    assert results[1].to_dict() == {
        "metric": INJECTION,
        "passed": False,
        "bound": "every case >= 1",
        "min": 1.0,
        "every_case": True,
        "min_scored": 1,
        "scored": 12,
        "value": 0.0,
        "failing": 2,
        "failing_ids": ["i03", "i07"],
        "reason": None,
    }


def test_floors_come_from_the_config_given_else_the_run_and_none_is_refused(store, tmp_path):
    assert floors_for(store, "r1") == ()
    with pytest.raises(NoFloors, match=r"^run r1: no floors: its config had no \[gate\] table"):
        required_floors(store, "r1")
    config = tmp_path / "gate.toml"
    config.write_text(f'[gate]\n"{RECALL}" = {{ min = 0.9 }}\n')
    assert required_floors(store, "r1", config) == (Floor(RECALL, min=0.9),)
    empty = tmp_path / "empty.toml"
    empty.write_text("[run]\nk = 3\n")
    with pytest.raises(NoFloors, match=r"empty.toml: no \[gate\] table: nothing to check$"):
        required_floors(store, "r1", empty)
