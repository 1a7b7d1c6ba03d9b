"""A rubric metric's own fixtures (CONTRACT section 21): the shipped shape, prompt = the
metric's name, human scores from 0 to 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragproof_core.calibration.fixture_files import FixtureError, load_metric_fixtures

REPO = Path(__file__).resolve().parents[3]
LINE = {
    "id": "t1",
    "prompt": "custom.tone",
    "case": {"question": "Q?"},
    "output": {"answer": {"text": "A."}},
    "human_score": 0.25,
    "reason": "why",
}


def test_the_demo_rubric_has_at_least_12_human_scored_fixtures():
    fixtures = load_metric_fixtures(
        REPO / "data/demo/sticks_to_sources_fixtures.jsonl", "custom.sticks_to_sources"
    )
    assert len(fixtures) >= 12
    assert {f.human_score for f in fixtures} == {0.0, 0.5, 1.0}


def test_every_problem_is_listed_with_its_line(tmp_path: Path):
    path = tmp_path / "f.jsonl"
    lines = [
        LINE,
        {**LINE, "id": "t2", "human_score": 2},
        {**LINE, "id": "t3", "prompt": "custom.other"},
        {**LINE},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(FixtureError) as caught:
        load_metric_fixtures(path, "custom.tone")
    assert caught.value.problems == [
        f"{path}:2: human_score must be a number from 0 to 1, got 2",
        f"{path}:3: unknown prompt 'custom.other'; known: custom.tone",
        f"{path}:4: duplicate id 't1' (first at {path}:1)",
    ]
    path.write_text(json.dumps(LINE) + "\n", encoding="utf-8")
    assert [f.human_score for f in load_metric_fixtures(path, "custom.tone")] == [0.25]
