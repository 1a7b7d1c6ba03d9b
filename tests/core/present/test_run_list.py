"""`ragproof runs`: a header and one row per run with what tells runs apart."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ragproof_core.present.run_list import run_dict, runs_table
from ragproof_core.store.run_store import RunRecord


def _record(run_id: str, settings: dict, **fields) -> RunRecord:
    started = datetime(2026, 12, 1, 9, 30, 5, 123456, tzinfo=UTC)
    values = {
        "dataset": "data/demo/cases.jsonl",
        "adapter": "ragproof_core.adapters.demo:DemoRAG",
        "status": "completed",
        "started_at": started,
        "finished_at": started,
        "judge_model": None,
        "prompt_hashes": {},
        "config_json": json.dumps({"run": settings}),
        "cost_usd": 0.0,
        "cases": 77,
        "case_failures": 0,
        "judge_requests": 0,
        "cache_hits": 0,
        **fields,
    }
    return RunRecord(run_id=run_id, **values)


PLAIN = _record(
    "20261201T093005Z-aaaaaa",
    {"k": 5, "source_match": "chunk", "metrics": ["retrieval.mrr", "retrieval.recall_at_k"]},
)
JUDGED = _record(
    "20261201T101500Z-bbbbbb",
    {"k": 10, "source_match": "document", "metrics": ["generation.groundedness"]},
    dataset="tests/fixtures/recorded/cases.jsonl",
    adapter="ragproof_core.adapters.recorded:RecordedAdapter",
    status="aborted:budget",
    judge_model="openai/gpt-4o-mini",
    judge_mode="combined",
    cost_usd=0.01234,
    cases=4,
    judge_errors=2,
    name="nightly",
    tags={"team": "search", "branch": "main"},
    config_digest="0123456789abcdef" * 4,
)


def test_two_runs_with_different_settings_are_told_apart():
    assert runs_table([PLAIN, JUDGED]).splitlines() == [
        "run id                   name     started (UTC)        dataset                              adapter                                           k  source match  metrics  judge               judge mode  status          judge errors  cases     cost  config    tags",  # noqa: E501
        "-----------------------  -------  -------------------  -----------------------------------  -----------------------------------------------  --  ------------  -------  ------------------  ----------  --------------  ------------  -----  -------  --------  -----------------------",  # noqa: E501
        "20261201T093005Z-aaaaaa  -        2026-12-01 09:30:05  data/demo/cases.jsonl                ragproof_core.adapters.demo:DemoRAG               5  chunk               2  none                -           completed                  0     77  $0.0000  -         -",  # noqa: E501
        "20261201T101500Z-bbbbbb  nightly  2026-12-01 09:30:05  tests/fixtures/recorded/cases.jsonl  ragproof_core.adapters.recorded:RecordedAdapter  10  document            1  openai/gpt-4o-mini  combined    aborted:budget             2      4  $0.0123  01234567  branch=main,team=search",  # noqa: E501
    ]


def test_json_carries_the_same_facts():
    assert run_dict(JUDGED) == {
        "run_id": "20261201T101500Z-bbbbbb",
        "dataset": "tests/fixtures/recorded/cases.jsonl",
        "adapter": "ragproof_core.adapters.recorded:RecordedAdapter",
        "status": "aborted:budget",
        "started_at": "2026-12-01T09:30:05.123456+00:00",
        "finished_at": "2026-12-01T09:30:05.123456+00:00",
        "k": 10,
        "source_match": "document",
        "metric_count": 1,
        "judge_model": "openai/gpt-4o-mini",
        "judge_mode": "combined",
        "prompt_hashes": {},
        "cost_usd": 0.01234,
        "cases": 4,
        "case_failures": 0,
        "judge_errors": 2,
        "name": "nightly",
        "tags": {"team": "search", "branch": "main"},
        "config_digest": "0123456789abcdef" * 4,
        "judge_first_error": None,
        "judge_response_format": None,
        "adapter_calls": {},
        "damaged_file": None,
    }


def test_a_run_stored_without_settings_shows_dashes_and_no_runs_says_so():
    old = _record("20251101T000000Z-cccccc", {}, config_json="{}")
    assert run_dict(old)["k"] is None and run_dict(old)["metric_count"] is None
    assert runs_table([old]).splitlines()[2].split()[6:9] == ["-", "-", "-"]
    assert runs_table([]) == "no runs stored yet"


def test_the_listing_and_the_report_start_from_every_column_of_the_run_table():
    from ragproof_core.present.report_data import REPORT_LEAVES_OUT, record_dict
    from ragproof_core.present.run_list import LEFT_OUT
    from ragproof_core.store.tables import RUN

    attributes = [c.attribute for c in RUN.columns]
    assert list(JUDGED.values()) == attributes
    # Each view holds every column but the ones it leaves out by name: a column declared
    # in store/tables.py reaches both without another list to edit.
    listed = set(run_dict(JUDGED)) - {"k", "source_match", "metric_count", "damaged_file"}
    assert listed == set(attributes) - LEFT_OUT
    reported = set(record_dict(JUDGED)) - {"config", "judge_failures"}
    assert reported == set(attributes) - REPORT_LEAVES_OUT - {"config_json"}
    assert set(attributes) >= LEFT_OUT and set(attributes) >= REPORT_LEAVES_OUT
