"""The system's own cost end to end (CONTRACT section 18): recorded latencies and usage
become system.* metrics, the summary names run.concurrency beside latency, and
`compare --fail-on-regression` exits 4 on a p95 regression and 0 without one."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES
from tests.support.cli import ragproof, run_json

SYSTEM = FIXTURES / "system"


def _run(name: str) -> dict:
    return run_json(SYSTEM / "cases.jsonl", SYSTEM / f"ragproof_{name}.toml")


def test_recorded_cost_is_scored_and_a_slower_p95_fails_the_gate():
    fast, slow = _run("fast"), _run("slow")
    latency = fast["metrics"]["system.latency_s"]
    # s01..s19 report 0.11 .. 0.29 s; s20 reports nothing: skipped, never 0.
    assert (latency["scored"], latency["skipped"]) == (19, 1)
    assert latency["mean"] == pytest.approx(sum(0.1 + 0.01 * i for i in range(1, 20)) / 19)
    assert (latency["p50"], latency["p95"]) == (0.2, 0.29)
    tokens = fast["metrics"]["system.tokens"]
    assert (tokens["scored"], tokens["skipped"], tokens["p95"]) == (19, 1, 139.0)
    assert fast["metrics"]["system.cost_usd"]["mean"] == 0.001
    assert set(fast["metrics"]) == {"system.latency_s", "system.tokens", "system.cost_usd"}

    shown = ragproof("show", fast["run_id"])
    assert "system.latency_s: measured with run.concurrency = 16 calls in flight" in shown.stdout

    gate = ragproof("compare", fast["run_id"], slow["run_id"], "--fail-on-regression", "--json")
    assert gate.returncode == 4, gate.stderr
    p95 = json.loads(gate.stdout)["metrics"]["system.latency_s"]["p95"]
    assert (round(p95["a"], 4), round(p95["b"], 4)) == (0.29, 0.79)
    assert round(p95["ci_low"], 4) == round(p95["ci_high"], 4) == 0.5
    assert "ragproof: regression: system.latency_s worse by 0.5000" in gate.stderr

    # Within a margin of 0.6 s the same comparison passes, and a run against itself passes.
    assert (
        ragproof(
            "compare", fast["run_id"], slow["run_id"], "--fail-on-regression", "--margin", "0.6"
        ).returncode
        == 0
    )
    same = ragproof("compare", fast["run_id"], fast["run_id"], "--fail-on-regression")
    assert same.returncode == 0, same.stderr
    assert "p95 A" in same.stdout
