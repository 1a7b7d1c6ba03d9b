"""The browser's runs, trends and run pages over a store of many runs (CONTRACT section
31): each reads from the catalog only the runs it shows (a page of them) and the counts
in one query, never every run's record, and paging reaches every run."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from starlette.testclient import TestClient

from ragproof_core.present import app_data
from ragproof_core.store.run_store import RunStore
from ragproof_serve import app
from ragproof_serve.app import Browser, build_app
from tests.support.judged_run import T0, write_judged_run

PORT = 8767
MAIN, OTHER = "judged.jsonl", "other.jsonl"
RUNS = 30  # every fifth of OTHER, the rest of MAIN, an hour apart
PAGE = 7


def dataset_of(index: int) -> str:
    return OTHER if index % 5 == 4 else MAIN


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> RunStore:
    store = RunStore(tmp_path_factory.mktemp("store"))
    for index in range(RUNS):
        write_judged_run(
            store,
            f"r{index:02d}",
            dataset=dataset_of(index),
            started_at=T0 + timedelta(hours=index),
        )
    return store


@pytest.fixture
def decoded(store, monkeypatch) -> list[int]:
    """How many run records each catalog read decoded, and (as -1) each reader of the
    catalog opened; reading every run is refused."""
    counts: list[int] = []
    records, page, queries = store.catalog_records, store.catalog_page, store.catalog_queries
    page_with = store.catalog_page_with

    def counted_records(*args, **kwargs):
        found = records(*args, **kwargs)
        counts.append(len(found))
        return found

    def counted_page(*args, **kwargs):
        found = page(*args, **kwargs)
        counts.append(len(found[0]))
        return found

    def counted_page_with(*args, **kwargs):
        found = page_with(*args, **kwargs)
        counts.append(len(found[0]))
        return found

    def counted_queries(*args, **kwargs):
        counts.append(-1)
        return queries(*args, **kwargs)

    def every_run(*args, **kwargs):
        raise AssertionError("a page read every run's record")

    monkeypatch.setattr(store, "catalog_records", counted_records)
    monkeypatch.setattr(store, "catalog_page", counted_page)
    monkeypatch.setattr(store, "catalog_page_with", counted_page_with)
    monkeypatch.setattr(store, "catalog_queries", counted_queries)
    monkeypatch.setattr(store, "list_runs", every_run)
    return counts


@pytest.fixture
def client(store, monkeypatch) -> TestClient:
    monkeypatch.setattr(app, "RUNS_PAGE", PAGE)
    monkeypatch.setattr(app, "TREND_RUNS", PAGE)
    monkeypatch.setattr(app_data, "OTHER_RUNS", PAGE)
    browser = Browser(store)
    client = TestClient(build_app(browser, PORT), base_url=f"http://127.0.0.1:{PORT}")
    client.browser = browser  # type: ignore[attr-defined]
    return client


def page_data(html: str) -> dict:
    found = re.search(r'<script[^>]*type="application/json"[^>]*>(.*?)</script>', html, re.S)
    assert found is not None, html[:500]
    return json.loads(found.group(1))


def get(client: TestClient, path: str, **params) -> dict:
    done = client.get(path, params=params)
    assert done.status_code == 200, done.text
    return page_data(done.text)


def ids(indexes) -> list[str]:
    return [f"r{i:02d}" for i in indexes]


def test_the_runs_page_reads_only_its_page_and_paging_reaches_every_run(client, decoded) -> None:
    newest = get(client, "/runs")
    assert [r["run_id"] for r in newest["runs"]] == ids(range(RUNS - PAGE, RUNS))
    assert newest["paging"] == {"offset": 0, "limit": PAGE, "total": RUNS}
    assert newest["datasets"] == [MAIN, OTHER]
    assert decoded == [-1, PAGE]  # one reader of the catalog, the page's runs decoded

    seen: list[str] = []
    for offset in range(0, RUNS, PAGE):
        shown = [r["run_id"] for r in get(client, "/runs", offset=offset)["runs"]]
        seen = shown + seen  # each page older than the one before, oldest first within
    assert seen == ids(range(RUNS))
    assert max(decoded) == PAGE
    assert get(client, "/runs", offset=RUNS)["runs"] == []


def test_the_trends_page_reads_a_page_of_its_datasets_runs(client, decoded) -> None:
    main = [i for i in range(RUNS) if dataset_of(i) == MAIN]
    newest = get(client, "/trends", dataset=MAIN)
    assert [r["run_id"] for r in newest["runs"]] == ids(main[-PAGE:])
    assert newest["window"] == {"offset": 0, "limit": PAGE, "total": len(main)}
    assert newest["datasets"] == [MAIN, OTHER]
    assert decoded == [-1, PAGE]
    assert sorted(client.browser._moments) == ids(main[-PAGE:])  # only these runs' scores

    seen: list[str] = []
    for offset in range(0, len(main), PAGE):
        shown = [r["run_id"] for r in get(client, "/trends", dataset=MAIN, offset=offset)["runs"]]
        seen = shown + seen
    assert seen == ids(main)
    assert max(decoded) == PAGE

    other = get(client, "/trends", dataset=OTHER)
    assert [r["run_id"] for r in other["runs"]] == ids(i for i in range(RUNS) if i % 5 == 4)
    assert client.get("/trends", params={"dataset": "nowhere.jsonl"}).status_code == 400


def test_a_run_page_offers_its_datasets_newest_runs_and_reads_no_more(client, decoded) -> None:
    data = get(client, "/runs/r03")
    assert data["run"]["run_id"] == "r03"
    main = [i for i in range(RUNS) if dataset_of(i) == MAIN]
    assert data["others"] == ids(reversed(main[-PAGE:]))  # the newest first
    assert data["datasets"] == [MAIN, OTHER]
    # The run itself with the datasets, then the newest of its dataset: two readers.
    assert decoded == [-1, 1, -1, PAGE]
    assert client.get("/runs/r99").status_code == 404
