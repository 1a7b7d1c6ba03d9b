"""A judge you can see (CONTRACT section 24), from the command line, against the local
judge server answering as the real providers do: a key that is not set refused
before anything is stored, `ragproof judge check`, the breaker's exit 6, judge
failures named in the summary and `runs`, structured output.

The recorded fixture asks 15 judge questions (tests/cli/test_judge.py).
"""

from __future__ import annotations

import json

import duckdb
import pytest

from tests.assets.expected import RECORDED, RUN_ARGS
from tests.support.cli import ragproof
from tests.support.judge_server import Reply
from tests.support.snapshot import tree_bytes

QUESTIONS = 15
KEY = "sk-test-judge-ops-4f2a9c"


@pytest.fixture
def judge_env(judge_env):
    """conftest's, with a key no output may show, priced at $1 and $2 per million tokens."""
    return {
        **judge_env,
        "OPENAI_API_KEY": KEY,
        "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK": "1.0",
        "RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK": "2.0",
    }


def _runs(env) -> list[dict]:
    done = ragproof("runs", "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_key_not_set_is_refused_before_anything_is_stored(server, judge_env, store_path):
    env = {k: v for k, v in judge_env.items() if k != "OPENAI_API_KEY"}
    before = tree_bytes(store_path)
    done = ragproof(*RUN_ARGS, env=env)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "ragproof: RAGPROOF_JUDGE_MODEL: openai/judge-test needs OPENAI_API_KEY, which is not "
        "set (LiteLLM reads it); with RAGPROOF_JUDGE_API_BASE naming a local server any "
        "non-empty value serves: export OPENAI_API_KEY=local"
    ]
    assert server.request_count == 0
    assert tree_bytes(store_path) == before
    # A dry run calls no judge: it needs no key.
    assert ragproof(*RUN_ARGS, "--dry-run", env=env).returncode == 0
    # Every juror is checked: here the second one's provider has no key.
    jury = {**judge_env, "RAGPROOF_JUDGE_MODEL": "openai/judge-test,anthropic/claude-judge"}
    jury.pop("ANTHROPIC_API_KEY", None)
    refused = ragproof(*RUN_ARGS, env=jury)
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "ragproof: RAGPROOF_JUDGE_MODEL: anthropic/claude-judge needs ANTHROPIC_API_KEY"
    )
    assert server.request_count == 0
    assert tree_bytes(store_path) == before


def test_judge_check_sends_one_request_never_cached(server, judge_env):
    first = ragproof("judge", "check", env=judge_env)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "judge openai/judge-test: answered"
    assert "reply validated: yes" in lines[1]
    assert lines[2] == "  tokens 100 in / 20 out, replies asked as json_object"
    assert lines[3].startswith("  one groundedness request of typical size: about $0.00")
    assert [r.prompt for r in server.requests] == ["groundedness"]
    again = json.loads(ragproof("judge", "check", "--json", env=judge_env).stdout)
    assert server.request_count == 2  # never served from a cache
    assert again["ok"] is True
    (model,) = again["models"]
    assert {
        k: v for k, v in model.items() if k not in ("latency_s", "groundedness_request_usd")
    } == {
        "model": "openai/judge-test",
        "ok": True,
        "validated": True,
        "input_tokens": 100,
        "output_tokens": 20,
        "response_format": "json_object",
        "error": None,
    }
    assert model["latency_s"] > 0 and model["groundedness_request_usd"] > 0


def test_judge_check_fails_with_the_providers_reason(server, judge_env):
    server.fallback = Reply.error(404)
    done = ragproof("judge", "check", env=judge_env)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "ragproof: judge check: openai/judge-test: NotFoundError (HTTP 404): The model "
        "`judge-test` does not exist or you do not have access to it. [not retryable]"
    ]
    assert "judge openai/judge-test: FAILED" in done.stdout
    assert server.request_count == 1  # a 404 is not retried
    no_key = {k: v for k, v in judge_env.items() if k != "OPENAI_API_KEY"}
    refused = ragproof("judge", "check", "--json", env=no_key)
    assert refused.returncode == 1
    assert "needs OPENAI_API_KEY" in refused.stderr
    assert server.request_count == 1


def test_a_refused_key_stops_the_run_after_five_requests_with_exit_6(server, judge_env, store_path):
    server.fallback = Reply.error(401)
    done = ragproof(*RUN_ARGS, "--json", env=judge_env)
    assert done.returncode == 6, done.stderr
    assert server.request_count == 5
    line = done.stderr.splitlines()[-1]
    assert line.startswith(
        "ragproof: judge unavailable: openai/judge-test: AuthenticationError (HTTP 401): "
        "Incorrect API key provided: sk-"
    )
    assert line.endswith("[not retryable] (its first 5 answered requests all failed this way)")
    assert KEY not in done.stdout + done.stderr
    shown = json.loads(done.stdout)
    assert shown["status"] == "aborted:judge"
    assert shown["judge"]["requests"] == 5
    assert shown["judge"]["judge_errors"] == 5
    (listed,) = [r for r in _runs(judge_env) if r["run_id"] == shown["run_id"]]
    assert (listed["status"], listed["judge_errors"]) == ("aborted:judge", 5)
    assert listed["judge_first_error"] == line.removeprefix("ragproof: judge unavailable: ")
    # Everything scored before the stop is kept: every case of the dataset has its rows.
    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        cases = con.execute(
            "select count(distinct case_id) from case_results where run_id = ?", [shown["run_id"]]
        ).fetchone()[0]
    assert cases == len((RECORDED / "cases.jsonl").read_text().splitlines())
    text = ragproof("show", shown["run_id"], env=judge_env)
    assert text.stdout.splitlines()[-1] == line.removeprefix("ragproof: ")


def test_a_completed_run_names_its_judge_failures(server, judge_env, store_path, tmp_path):
    # Every completeness reply is prose: two questions, each repaired once, both fail.
    server.fallback = lambda request: (
        Reply(content="Complete, I think.") if request.prompt == "completeness" else Reply()
    )
    done = ragproof(*RUN_ARGS, env=judge_env)
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith(
        f"judge: 2 of {QUESTIONS + 2} requests failed (first: reply failed validation twice: "
        "the reply is not valid JSON"
    )
    run_id = done.stdout.split()[1].rstrip(":")
    table = ragproof("runs", env=judge_env).stdout.splitlines()
    assert "judge errors" in table[0]
    (row,) = [line for line in table if line.startswith(run_id)]
    assert " completed " in row and "  2  " in row
    (listed,) = [r for r in _runs(judge_env) if r["run_id"] == run_id]
    assert listed["judge_errors"] == 2
    report = tmp_path / "report.html"
    assert ragproof("report", run_id, "--out", str(report), env=judge_env).returncode == 0
    assert f"judge: 2 of {QUESTIONS + 2} requests failed (first: " in report.read_text()


def test_a_model_that_takes_a_schema_is_sent_each_prompts_schema(server, judge_env):
    # LiteLLM says gpt-4o-mini takes a JSON schema: each request carries its prompt's.
    env = {**judge_env, "RAGPROOF_JUDGE_MODEL": "openai/gpt-4o-mini"}
    done = ragproof(*RUN_ARGS, "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert server.request_count == QUESTIONS
    for request in server.requests:
        fmt = request.body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["name"] == request.prompt
    assert server.schema_violations == []  # every default reply fits the schema sent
    shown = json.loads(done.stdout)
    assert shown["judge"]["response_format"] == "json_schema"
    (listed,) = [r for r in _runs(env) if r["run_id"] == shown["run_id"]]
    assert listed["judge_response_format"] == "json_schema"


def test_help_lists_the_exit_codes():
    done = ragproof("--help")
    assert done.returncode == 0
    assert "exit codes:" in done.stdout
    assert "  6  the judge could not answer, and the run stopped calling it (aborted:judge)" in (
        done.stdout
    )
