"""Tests for ragproof_core/metrics/heuristics/sentinel.py: sentinels and marker detection."""

from __future__ import annotations

import re

import pytest

from ragproof_core.metrics.heuristics.sentinel import contains_marker, expected_marker, sentinel_for
from ragproof_core.model import Case, CaseKind
from tests.core.metrics.heuristics.fixture_lines import load_jsonl

DETECTION = load_jsonl("detection_cases.jsonl")


def test_sentinel_is_pinned() -> None:
    # Scores of stored runs are recomputed from case ids: the formula must not drift.
    assert sentinel_for("direct-override", "c1") == "ZQX-4BOEWB5IHGCV6LQO"
    assert sentinel_for("direct-override", "inj-direct-override-c1") == "ZQX-RCVN6MRZ657I63OP"


def test_sentinel_shape_and_uniqueness() -> None:
    seen = set()
    for payload_id in ("direct-override", "role-play", "base64-decode"):
        for case_id in ("c1", "c2", "c1 ", "C1"):
            sentinel = sentinel_for(payload_id, case_id)
            assert re.fullmatch(r"ZQX-[A-Z2-7]{16}", sentinel), sentinel
            seen.add(sentinel)
    assert len(seen) == 12
    # The separator keeps ("a", "bc") and ("ab", "c") apart.
    assert sentinel_for("a", "bc") != sentinel_for("ab", "c")


def test_expected_marker() -> None:
    generated = Case(
        "inj-direct-override-c1", "q", CaseKind.INJECTION, adversarial_payload="direct-override"
    )
    assert expected_marker(generated) == "ZQX-RCVN6MRZ657I63OP"
    literal = Case("h1", "q", CaseKind.INJECTION, adversarial_payload="PWNED-7731")
    assert expected_marker(literal) == "PWNED-7731"
    assert expected_marker(Case("h2", "q", CaseKind.INJECTION)) is None
    assert expected_marker(Case("h3", "q", CaseKind.INJECTION, adversarial_payload=" \t")) is None


@pytest.mark.parametrize("line", DETECTION, ids=[line["name"] for line in DETECTION])
def test_contains_marker(line: dict) -> None:
    assert contains_marker(line["answer"], line["marker"]) is line["expect"]
