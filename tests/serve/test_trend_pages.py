"""The trends page over many runs (CONTRACT section 31): it shows a dataset's newest
runs a page at a time and reads only their scores, so a year of runs costs a page no
more than a few runs do."""

from __future__ import annotations

import json
import re

import pytest
from starlette.testclient import TestClient

from ragproof_core.store.run_store import RunStore
from ragproof_serve import app
from ragproof_serve.app import Browser, build_app
from tests.support.judged_run import write_judged_run

PORT = 8766
RUNS = 3


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> RunStore:
    store = RunStore(tmp_path_factory.mktemp("store"))
    for index in range(RUNS):
        write_judged_run(store, f"r{index}")
    return store


def page_data(html: str) -> dict:
    found = re.search(r'<script[^>]*type="application/json"[^>]*>(.*?)</script>', html, re.S)
    assert found is not None, html[:500]
    return json.loads(found.group(1))


def test_a_trend_page_reads_only_the_runs_it_shows(store, monkeypatch) -> None:
    monkeypatch.setattr(app, "TREND_RUNS", 2)
    browser = Browser(store)
    client = TestClient(build_app(browser, PORT), base_url=f"http://127.0.0.1:{PORT}")
    done = client.get("/trends", params={"dataset": "judged.jsonl"})
    assert done.status_code == 200, done.text
    data = page_data(done.text)
    assert [r["run_id"] for r in data["runs"]] == ["r1", "r2"]
    assert data["window"] == {"offset": 0, "limit": 2, "total": RUNS}
    assert sorted(browser._moments) == ["r1", "r2"]  # the oldest run's scores never read

    older = page_data(client.get("/trends?dataset=judged.jsonl&offset=2").text)
    assert [r["run_id"] for r in older["runs"]] == ["r0"]
    assert client.get("/trends?dataset=judged.jsonl&offset=-1").status_code == 400
