"""A judged `ragproof run` whose budget runs out part-way: exit 2, status
aborted:budget, spending within RAGPROOF_MAX_COST_USD, the scored rows kept and
the questions not asked skipped with the budget as the reason; its resume judges the
outputs it stored (the pipeline asked only for cases it never answered) and ends with the
numbers of a run never stopped.

The numbers: the server reports (100, 20) tokens per reply, priced at $1000 per
million tokens each way, so every call costs exactly $0.12. Before each call the
budget reserves an estimate: the rendered prompt at 4 characters per token (435 to
440 tokens here) plus 200 assumed output tokens, $0.635 to $0.640. With
run.concurrency 1 the calls run one at a time, so call n starts only if
0.12 (n - 1) + 0.64 <= 1.50: exactly 8 calls ($0.84 + $0.64 = $1.48 fits, $0.96 +
$0.64 = $1.60 does not), $0.96 spent."""

from __future__ import annotations

import json

import pytest

from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.run.evaluate import BUDGET_REASON
from tests.faults.conftest import judge_env, plain_run_files, query
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer

CASES = 10
JUDGED = ("generation.answer_relevance", "robustness.overrefusal")
MAX_COST_USD = 1.5
CALLS = 8


@pytest.fixture
def judge():
    with JudgeServer() as server:
        yield server


@pytest.mark.slow
def test_a_budget_breach_aborts_the_run_and_keeps_what_was_scored(store_path, tmp_path, judge):
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=1)
    priced = judge_env(
        judge.url,
        RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="1000",
        RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK="1000",
    )
    env = cli_env(**priced, RAGPROOF_MAX_COST_USD=str(MAX_COST_USD))
    done = ragproof("run", "--dataset", str(dataset), "--config", str(config), "--json", env=env)
    requests = judge.request_count

    assert done.returncode == 2, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "aborted:budget"
    run_id = result["run_id"]
    assert requests == CALLS

    ((status, cost, cases, judge_requests),) = query(
        store_path, "select status, cost_usd, cases, judge_requests from runs"
    )
    assert (status, judge_requests) == ("aborted:budget", CALLS)
    assert cost == pytest.approx(CALLS * 0.12, rel=1e-12) and cost <= MAX_COST_USD

    rows = query(store_path, "select case_id, metric, status, value, reason from case_results")
    present = {case_id for case_id, *_ in rows}
    # Cases the adapter never started (it stops once the budget is out) have no rows;
    # every case that was started has a row for every metric.
    assert cases == len(present) <= CASES
    assert len(rows) == len(METRIC_NAMES) * cases
    judged = [r for r in rows if r[1] in JUDGED]
    scored = [r for r in judged if r[2] == "scored"]
    not_judged = [r for r in judged if r[2] != "scored"]
    assert len(scored) == CALLS
    assert not_judged and {(r[2], r[3], r[4]) for r in not_judged} == {
        ("skipped", None, BUDGET_REASON)
    }
    assert "budget" in BUDGET_REASON
    # The deterministic metrics of every started case are untouched by the abort.
    assert {r[2] for r in rows if r[1] == "echo.exact_match"} == {"skipped"}
    assert {r[4] for r in rows if r[1] == "echo.exact_match"} == {"case has no expected_answer"}

    summaries = dict(
        query(
            store_path,
            "select metric, scored from metric_summaries where metric in "
            "('generation.answer_relevance', 'robustness.overrefusal')",
        )
    )
    assert sum(summaries.values()) == CALLS

    shown = ragproof("show", run_id, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"run {run_id}: aborted:budget, {cases} cases\n")

    # The resume, with a budget that holds: the outputs stored but not judged are judged
    # as they are; the pipeline answers only the cases it never answered.
    resumed = ragproof("run", "--resume", run_id, "--json", env=cli_env(**priced))
    assert resumed.returncode == 0, resumed.stderr
    again = json.loads(resumed.stdout)
    assert again["status"] == "completed"
    assert again["adapter_calls"] == {"retrieve": 0, "answer": CASES - cases}
    # Every question not judged before is asked now, and no other.
    unjudged = len(not_judged) + len(JUDGED) * (CASES - cases)
    assert judge.request_count == CALLS + unjudged
    whole = ragproof(
        "run", "--dataset", str(dataset), "--config", str(config), "--json", env=cli_env(**priced)
    )
    assert whole.returncode == 0, whole.stderr
    assert again["metrics"] == json.loads(whole.stdout)["metrics"]
    ((resumed_cases, resumed_status),) = query(
        store_path, "select cases, status from runs where run_id = ?", [run_id]
    )
    assert (resumed_cases, resumed_status) == (CASES, "completed")
    # The outputs judged as they were are the run's once, not once more beside.
    assert query(store_path, "select count(*) from outputs where run_id = ?", [run_id]) == [
        (CASES,)
    ]
