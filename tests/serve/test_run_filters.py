"""The runs page's filters applied in the catalog query (CONTRACT section 31): a run on
no page of the unfiltered list is found by its filter, a page is the newest runs that
match (LIMIT/OFFSET after the filter), its total counts the runs that match, and each
filter lists every run's values; one reader of the catalog, the page's runs decoded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from starlette.testclient import TestClient

from ragproof_core.store.run_store import RunStore
from ragproof_serve import app
from ragproof_serve.app import Browser, build_app
from tests.serve.test_paged_pages import decoded, get, ids  # noqa: F401 (a fixture)
from tests.support.judged_run import T0, write_judged_run

PORT = 8768
MAIN, OTHER = "judged.jsonl", "other.jsonl"
RUNS, PAGE = 12, 5
OLD = "r00"  # the oldest run: on no page but the last of the unfiltered list
SEARCH = {"team": "search"}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> RunStore:
    store = RunStore(tmp_path_factory.mktemp("store"))
    write_judged_run(
        store,
        OLD,
        dataset=OTHER,
        adapter="pkg.mod:Special",
        name="first-one",
        tags=SEARCH,
        judge_model="openai/other-judge",
        judge_mode="combined",
        started_at=T0,
    )
    for index in range(1, RUNS):
        tags = SEARCH if index == 7 else {"team": "ranking"}
        write_judged_run(store, f"r{index:02d}", tags=tags, started_at=T0 + timedelta(hours=index))
    return store


@pytest.fixture
def client(store, monkeypatch) -> TestClient:
    monkeypatch.setattr(app, "RUNS_PAGE", PAGE)
    return TestClient(build_app(Browser(store), PORT), base_url=f"http://127.0.0.1:{PORT}")


def shown(client: TestClient, **filters) -> tuple[list[str], int]:
    data = get(client, "/runs", **filters)
    return [r["run_id"] for r in data["runs"]], data["paging"]["total"]


def test_a_run_outside_the_first_page_is_found_by_its_filter(client, decoded) -> None:  # noqa: F811
    first = get(client, "/runs")
    assert OLD not in [r["run_id"] for r in first["runs"]]
    assert first["paging"]["total"] == RUNS and first["filters"] == {}
    decoded.clear()
    found = get(client, "/runs", dataset=OTHER)
    assert [r["run_id"] for r in found["runs"]] == [OLD]
    assert found["paging"] == {"offset": 0, "limit": PAGE, "total": 1}
    assert found["filters"] == {"dataset": OTHER}
    assert found["datasets"] == [MAIN, OTHER]
    # The filters' lists hold every run's values, not only the page's.
    assert found["options"]["adapter"] == ["pkg.mod:Special", "recorded"]
    assert found["options"]["tag"] == ["team=ranking", "team=search"]
    assert found["options"]["judge"] == ["openai/judge-test", "openai/other-judge"]
    assert decoded == [-1, 1]  # one reader of the catalog, the one run decoded
    for name, value in [
        ("adapter", "pkg.mod:Special"),
        ("name", "first-one"),
        ("judge", "openai/other-judge"),
        ("mode", "combined"),
    ]:
        assert shown(client, **{name: value}) == ([OLD], 1), name


def test_a_page_is_the_newest_runs_that_match_and_counts_them(client) -> None:
    assert shown(client, tag="team=search") == ([OLD, "r07"], 2)
    assert shown(client, tag="team=search", offset=1) == ([OLD], 2)  # paged after the filter
    ranking = ids(i for i in range(1, RUNS) if i != 7)
    assert shown(client, tag="team=ranking") == (ranking[-PAGE:], len(ranking))
    assert shown(client, tag="team=ranking", offset=PAGE * 2) == (ranking[:-10], len(ranking))
    # The page's placeholders: no name, no judge mode; the run's [run] settings.
    assert shown(client, name="–")[1] == RUNS - 1
    assert shown(client, k="5", source_match="chunk")[1] == RUNS
    assert shown(client, dataset=MAIN, tag="team=search") == (["r07"], 1)
    # Nothing matches: an empty page, not an error.
    for filters in [{"tag": "team"}, {"tag": 'no"key=x'}, {"adapter": "none"}, {"k": "7"}]:
        assert shown(client, **filters) == ([], 0), filters
