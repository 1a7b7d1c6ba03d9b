"""Case search over a stored run: text anywhere in id, question or answer; a metric's status."""

from pathlib import Path

import pytest

from ragproof_core.present.case_search import CaseQuery, search_cases
from ragproof_core.store.run_store import RunNotFound, RunStore
from tests.support.judged_run import ABSTENTION, GROUNDEDNESS, write_judged_run


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
