"""Case search over a stored run: text anywhere in id, question or answer; a metric's status;
sorted by a column; the failing cases (past a floor, or an error); the metrics' columns."""

from pathlib import Path

import pytest

from ragproof_core.config.gate import Floor
from ragproof_core.metrics.custom import stored_registry
from ragproof_core.present.case_search import CaseQuery, search_cases
from ragproof_core.store.run_store import RunNotFound, RunStore
from tests.support.judged_run import (
    ABSTENTION,
    GROUNDEDNESS,
    GROUNDEDNESS_SCORES,
    RELEVANCE,
    write_judged_run,
)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> RunStore:
    store = RunStore(tmp_path_factory.mktemp("search") / "store")
    write_judged_run(store)
    return store


def ids(found: dict) -> list[str]:
    return [case["id"] for case in found["cases"]]


def test_text_matches_id_question_or_answer_in_any_case(store):
    found = search_cases(store, "judged", CaseQuery(text="ITEM Q05"))
    assert ids(found) == ["q05"] and found["total"] == 1
    case = found["cases"][0]
    assert case["question"] == {"t": "What does item q05 say?", "cut": 0}
    assert case["answer"] == {"t": "Item q05 says yes.", "cut": 0}
    assert case["kind"] == "qa"
    assert case["results"]["generation.answer_relevance"] == ["scored", 1.0]
    # "q1" is in the ids (and questions) q10 to q19, in dataset order.
    assert ids(search_cases(store, "judged", CaseQuery(text="q1"))) == [
        f"q{i}" for i in range(10, 20)
    ]
    assert search_cases(store, "judged", CaseQuery(text="nowhere"))["total"] == 0


def test_status_filter_with_and_without_a_metric(store):
    scored = search_cases(store, "judged", CaseQuery(metric=GROUNDEDNESS, status="scored"))
    assert ids(scored) == [f"q0{i}" for i in range(1, 9)]
    assert ids(search_cases(store, "judged", CaseQuery(metric=ABSTENTION))) == ["q01", "q02", "q03"]
    # Any metric with that status: every case has a scored answer_relevance.
    assert search_cases(store, "judged", CaseQuery(status="scored"))["total"] == 20
    assert search_cases(store, "judged", CaseQuery(status="error"))["total"] == 0
    both = search_cases(store, "judged", CaseQuery(text="q0", metric=ABSTENTION, status="scored"))
    assert ids(both) == ["q01", "q02", "q03"]


def test_pages_carry_the_total(store):
    page = search_cases(store, "judged", CaseQuery(text="item", offset=15, limit=5))
    assert ids(page) == ["q16", "q17", "q18", "q19", "q20"] and page["total"] == 20
    past = search_cases(store, "judged", CaseQuery(text="item", offset=25, limit=5))
    assert ids(past) == [] and past["total"] == 20


def test_an_unknown_run_is_not_found(store, tmp_path: Path):
    with pytest.raises(RunNotFound):
        search_cases(store, "nope", CaseQuery())


def test_rows_sort_by_a_metric_with_unscored_cases_last(store):
    up = search_cases(store, "judged", CaseQuery(sort=GROUNDEDNESS, limit=20))
    # 0 (q04), 0.25 (q02, q08 in dataset order), 0.5, 0.75, 1 (q03, q05, q07), then the
    # cases groundedness did not score, in dataset order.
    assert ids(up)[:8] == ["q04", "q02", "q08", "q06", "q01", "q03", "q05", "q07"]
    assert ids(up)[8:] == [f"q{i:02d}" for i in range(9, 21)]
    down = search_cases(store, "judged", CaseQuery(sort=GROUNDEDNESS, order="desc", limit=20))
    assert ids(down)[:8] == ["q03", "q05", "q07", "q01", "q06", "q02", "q08", "q04"]
    assert ids(down)[8:] == ids(up)[8:]
    assert ids(search_cases(store, "judged", CaseQuery(sort="case", order="desc")))[:2] == [
        "q20",
        "q19",
    ]
    # Sorting and filtering together: the sorted page of the filtered cases.
    both = search_cases(store, "judged", CaseQuery(text="q0", sort=RELEVANCE, order="asc"))
    assert ids(both) == [f"q0{i}" for i in range(1, 10)]


def test_failing_cases_are_past_a_floor_or_an_error(store):
    floors = (Floor(GROUNDEDNESS, min=0.5), Floor(RELEVANCE, max=0.6, every_case=True))
    failing = search_cases(store, "judged", CaseQuery(failing=True, limit=20), floors)
    # Groundedness below 0.5: q02, q04, q08; relevance above 0.6: q01..q10.
    assert ids(failing) == [f"q{i:02d}" for i in range(1, 11)]
    assert failing["total"] == 10
    # A value exactly on the floor is not past it.
    assert "q06" in ids(failing) and GROUNDEDNESS_SCORES["q06"] == 0.5
    only_groundedness = search_cases(
        store, "judged", CaseQuery(failing=True), (Floor(GROUNDEDNESS, min=0.5),)
    )
    assert ids(only_groundedness) == ["q02", "q04", "q08"]
    # Without floors and without an error, nothing fails.
    assert search_cases(store, "judged", CaseQuery(failing=True))["total"] == 0


def test_each_metric_says_how_to_show_it(store):
    found = search_cases(
        store, "judged", CaseQuery(), (Floor(GROUNDEDNESS, min=0.5),), stored_registry(None)
    )
    # In the registry's order: generation's metrics before robustness'.
    assert found["metrics"] == [GROUNDEDNESS, RELEVANCE, ABSTENTION]
    columns = {c["metric"]: c for c in found["columns"]}
    assert [c["metric"] for c in found["columns"]] == found["metrics"]
    assert columns[GROUNDEDNESS] == {
        "metric": GROUNDEDNESS,
        "higher_is_better": True,
        "bounded": True,
        "scored": 8,
        "judge_errors": 0,
        "unscored": False,
        "floor": {"min": 0.5, "max": None},
    }
    assert columns[ABSTENTION]["floor"] is None and columns[ABSTENTION]["scored"] == 3
