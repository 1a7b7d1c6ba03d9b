"""`ragproof calibrate` as CI runs it (.github/workflows/calibrate.yml): the installed
command against the local judge server, its exit code deciding the job.

Exit 0 when every prompt agrees with the human scores well enough, 1 below a
threshold, 2 when the judge budget stops it. The server replies per fixture as
planned (tests/core/calibration/test_calibrate.py), so the agreement is known exactly.
"""

from __future__ import annotations

import json

import pytest

from tests.core.calibration.test_calibrate import responder
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer

# groundedness: 4 one-band misses -> exact 8/12 = 67%, below the 70% threshold.
BELOW = {
    "g01-cli-debug-logging": 0.5,
    "g03-leaflet-ibuprofen": 1.0,
    "g04-finance-card-fee": 0.5,
    "g07-docs-python-support": 0.0,
}


@pytest.fixture
def judge_server():
    with JudgeServer() as server:
        yield server


def _calibrate(server: JudgeServer, *args: str, **env: str):
    return ragproof(
        "calibrate",
        *args,
        env=cli_env(
            RAGPROOF_JUDGE_MODEL="openai/judge-test",
            RAGPROOF_JUDGE_API_BASE=server.url,
            OPENAI_API_KEY="sk-ragproof-test-key-0123456789",
            **env,
        ),
    )


@pytest.mark.slow
def test_calibrate_passes_exit_0(judge_server):
    judge_server.responder = responder({})
    done = _calibrate(judge_server, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["passed"] is True
    assert {name: (p["n"], p["exact"], p["within"]) for name, p in report["prompts"].items()} == {
        **{
            name: (12, 12, 12)
            for name in (
                "groundedness", "citation_support", "answer_relevance", "completeness", "refusal",
                "context_relevance", "knowledge_retention", "groundedness_history", "critique_qa",
                "task_completion", "generate_nuggets",
            )
        },
        "claim_check": (14, 14, 14),
        "nugget_support": (14, 14, 14),
    }  # fmt: skip
    assert judge_server.request_count == 12 * 11 + 14 * 2


@pytest.mark.slow
def test_calibrate_below_a_threshold_exits_1(judge_server):
    judge_server.responder = responder(BELOW)
    done = _calibrate(judge_server)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "  groundedness/g07-docs-python-support: human 0.5, judge 0" in lines
    assert lines[-1] == "FAILED"
    assert done.stderr == ""


@pytest.mark.slow
def test_calibrate_stopped_by_the_budget_exits_2(judge_server):
    judge_server.responder = responder({})
    done = _calibrate(
        judge_server,
        RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="1000",
        RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK="1000",
        RAGPROOF_MAX_COST_USD="0.000001",
    )
    assert done.returncode == 2
    assert done.stderr == (
        "ragproof: calibration stopped at the judge budget (RAGPROOF_MAX_COST_USD)\n"
    )
    assert judge_server.request_count == 0


@pytest.mark.slow
def test_calibrate_without_a_judge_exits_1(judge_server):
    done = ragproof("calibrate", env=cli_env())
    assert done.returncode == 1
    assert done.stderr == "ragproof: calibrate needs a judge: set RAGPROOF_JUDGE_MODEL\n"
