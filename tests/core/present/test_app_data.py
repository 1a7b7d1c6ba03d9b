"""The results browser's run pages' data: a run with its latest probe, two runs compared
exactly as `compare` compares them, or refused as `compare` refuses them."""

from datetime import UTC, datetime

import pytest

from ragproof_core.calibration.probe import ProbeResult, ProbeRow
from ragproof_core.compare.comparison import RunSide, compare_runs
from ragproof_core.present.app_data import compare_data, run_data, runs_data
from ragproof_core.store.run_store import RunStore
from tests.support.judged_run import GROUNDEDNESS, RELEVANCE, write_judged_run


@pytest.fixture
def store(tmp_path) -> RunStore:
    store = RunStore(tmp_path / "store")
    write_judged_run(store, "a")
    write_judged_run(store, "b")
    write_judged_run(store, "c", judge_model="openai/other-judge")
    return store


def test_a_run_shows_its_latest_probe_only(store):
    for hour, changed in ((9, 1), (10, 3)):
        rows = (ProbeRow(GROUNDEDNESS, "verbosity", 8, changed, 0),)
        store.write_probe(
            ProbeResult("a", "openai/judge-test", 8, 0, rows),
            now=datetime(2026, 12, 2, hour, tzinfo=UTC),
        )
    records = store.list_runs()
    data = run_data(store, store.get_run("a"), records)
    assert data["run"]["run_id"] == "a" and data["others"] == ["c", "b"]
    (probe,) = data["probes"]
    assert (probe["metric"], probe["perturbation"], probe["cases"], probe["changed"]) == (
        GROUNDEDNESS,
        "verbosity",
        8,
        3,
    )
    assert probe["share"] == 3 / 8 and probe["ci_low"] < 3 / 8 < probe["ci_high"]
    assert probe["created_at"] == "2026-12-02T10:00:00+00:00"
    assert run_data(store, store.get_run("b"), records)["probes"] == []
    assert [r["run_id"] for r in runs_data(records)["runs"]] == [r.run_id for r in records]
    # CONTRACT section 31: the browser's runs page is paged, the newest first.
    newest = runs_data(records, offset=0, limit=2)
    assert [r["run_id"] for r in newest["runs"]] == [r.run_id for r in records[-2:]]
    assert newest["paging"] == {"offset": 0, "limit": 2, "total": len(records)}
    older = runs_data(records, offset=2, limit=2)
    assert [r["run_id"] for r in older["runs"]] == [r.run_id for r in records[-4:-2]]


def test_two_runs_are_compared_as_compare_compares_them(store):
    data = compare_data(store, "a", "b")
    sides = [RunSide(store.get_run(r), store.case_results_frame(r)) for r in ("a", "b")]
    assert data["refused"] is None
    assert data["comparison"] == compare_runs(*sides).to_dict()
    assert {GROUNDEDNESS, RELEVANCE} <= set(data["comparison"]["metrics"])


def test_runs_judged_differently_are_refused_unless_allowed(store):
    refused = compare_data(store, "a", "c")
    assert refused["comparison"] is None
    assert "were judged differently" in refused["refused"]
    allowed = compare_data(store, "a", "c", allow_mixed=True)
    assert allowed["refused"] is None and allowed["comparison"]["mixed_judges"] is True
