"""`ragproof generate qa` as a user runs it: the installed command in a subprocess,
real LiteLLM over HTTP to the local judge server running in this process."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ragproof_core.data.dataset import load_dataset
from tests.conftest import FIXTURES, REPO
from tests.support.cli import cli_env, ragproof
from tests.support.generation import scripted
from tests.support.judge_server import JudgeServer, default_content

CORPUS = str(FIXTURES / "generation" / "corpus.jsonl")
PROMPTS = REPO / "ragproof_core" / "judge" / "prompts"
HASHES = {
    name: hashlib.sha256((PROMPTS / f"{name}.txt").read_bytes()).hexdigest()
    for name in ("critique_qa", "generate_qa", "generate_unanswerable")
}


@pytest.fixture(scope="module")
def server():
    with JudgeServer() as srv:
        yield srv


@pytest.fixture
def judge_env(server, store_path):
    server.reset()
    server.usage = (100, 20)
    server.responder = default_content
    return cli_env(
        RAGPROOF_JUDGE_MODEL="openai/judge-test",
        RAGPROOF_JUDGE_API_BASE=server.url,
        RAGPROOF_JUDGE_INPUT_COST_PER_MTOK="1.0",
        RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK="2.0",
        OPENAI_API_KEY="sk-test-generate-0000",
    )


def generate(env, out, *extra):
    return ragproof(
        "generate", "qa", "--corpus", CORPUS, "--out", str(out), "--count", "4",
        "--unanswerable", "2", "--seed", "3", *extra, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_writes_a_dataset_and_a_warm_rerun_is_byte_identical(server, judge_env, tmp_path):
    out = tmp_path / "cases.jsonl"
    estimate = generate(judge_env, out, "--dry-run", "--json")
    assert estimate.returncode == 0, estimate.stderr
    before = json.loads(estimate.stdout)
    assert (before["questions"], before["cached"], before["calls"], before["max_requests"]) == (
        12, 0, 12, 72,
    )  # fmt: skip
    assert server.request_count == 0 and not out.exists()

    done = generate(judge_env, out, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["written"]) == ("completed", {"qa": 4, "unanswerable": 2})
    assert summary["judge"]["requests"] == 12 and server.request_count == 12
    # Usage (100, 20) per request at $1 and $2 per million tokens.
    assert (summary["judge"]["input_tokens"], summary["judge"]["output_tokens"]) == (1200, 240)
    cases = load_dataset(out)
    assert [c.id for c in cases] == [
        "gen-0001", "gen-0002", "gen-0003", "gen-0004", "gen-u-0001", "gen-u-0002",
    ]  # fmt: skip
    corpus_ids = {json.loads(line)["id"] for line in Path(CORPUS).read_text().splitlines()}
    assert all(set(c.expected_source_ids) <= corpus_ids for c in cases[:4])
    generated = {"seed": 3, "model": "openai/judge-test", "prompt_hashes": HASHES}
    assert all(c.metadata == {"generated": generated} for c in cases)
    first_bytes = out.read_bytes()

    server.reset()
    again = generate(judge_env, out, "--json")
    assert again.returncode == 0, again.stderr
    assert server.request_count == 0
    assert json.loads(again.stdout)["judge"]["cache_hits"] == 12
    assert out.read_bytes() == first_bytes


@pytest.mark.slow
def test_the_summary_reports_what_the_gates_rejected(server, judge_env, tmp_path):
    server.responder = scripted(
        reject={"qa slot 1, attempt 1"},
        same_question={"qa slot 2, attempt 1", "qa slot 3, attempt 1"},
    )
    out = tmp_path / "cases.jsonl"
    done = ragproof(
        "generate", "qa", "--corpus", CORPUS, "--out", str(out), "--count", "3", env=judge_env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote 3 qa and 0 unanswerable cases to {out} (seed 0, judge openai/judge-test)",
        "  qa: 3 of 3 slots filled; 5 questions written, 1 near-duplicates dropped, "
        "4 critiqued, 1 rejected by the critique (not standalone 1), 0 judge errors, "
        "0 slots unfilled",
        "  judge: requests 9 (0 repairs), cache hits 0, judge errors 0, tokens 900 in / 180 out, "
        "cost $0.0013",
    ]
    assert len(load_dataset(out)) == 3


@pytest.mark.slow
def test_the_budget_stops_with_exit_2_keeping_the_cases_so_far(server, judge_env, tmp_path):
    # Each reply bills $0.10 (100,000 input tokens at $1/Mtok); the estimate before a call is
    # under $0.001, so the round-two question for the rejected slot 2 is refused at $0.4005.
    server.usage = (100_000, 0)
    server.responder = scripted(reject={"qa slot 2, attempt 1"})
    env = {**judge_env, "RAGPROOF_MAX_COST_USD": "0.4005"}
    out = tmp_path / "cases.jsonl"
    done = ragproof(
        "generate", "qa", "--corpus", CORPUS, "--out", str(out), "--count", "2", env=env
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"ragproof: generation stopped at the judge budget; kept the 1 cases written so far "
        f"in {out}"
    ]
    assert server.request_count == 4
    assert [c.id for c in load_dataset(out)] == ["gen-0001"]


@pytest.mark.parametrize(
    ("args", "env_extra", "message"),
    [
        (["--count", "-1"], {}, "ragproof: --count must be 0 or more, got -1"),
        (["--count", "2", "--corpus", str(FIXTURES / "generation" / "bad_corpus.jsonl")], {},
         f"ragproof: {FIXTURES / 'generation' / 'bad_corpus.jsonl'}:2: "
         "'text' must be a non-empty string"),
        (["--count", "2"], {"RAGPROOF_JUDGE_MODEL": ""},
         "ragproof: generate qa needs a judge model: set RAGPROOF_JUDGE_MODEL"),
        (["--count", "2", "--multi-chunk", "1", "--corpus",
          str(FIXTURES / "generation" / "hostile_corpus.jsonl")], {},
         "ragproof: --multi-chunk: no document in the corpus has 2 chunks"),
    ],
)  # fmt: skip
def test_bad_input_exits_1_before_any_call(server, judge_env, tmp_path, args, env_extra, message):
    out = tmp_path / "cases.jsonl"
    corpus = [] if "--corpus" in args else ["--corpus", CORPUS]
    done = ragproof(
        "generate", "qa", *corpus, "--out", str(out), *args, env={**judge_env, **env_extra}
    )
    assert (done.returncode, done.stderr.splitlines()) == (1, [message])
    assert server.request_count == 0 and not out.exists()


@pytest.mark.slow
def test_calibrate_covers_the_critique_gate(server, judge_env):
    # The default critique approves everything and calls a question answerable exactly when
    # its proposed answer is non-empty: on the 12 human-scored fixtures that agrees on all
    # three flags 5 times and on two of three 5 times (CRITIQUE fixtures, q01..q12).
    done = ragproof("calibrate", "--json", env=judge_env)
    report = json.loads(done.stdout)
    assert report["prompts"]["critique_qa"] == {
        "n": 12, "exact": 5, "within": 10, "exact_share": 5 / 12, "within_share": 10 / 12,
        "judge_errors": 0, "unscored": 0, "passed": False,
    }  # fmt: skip
    assert done.returncode == 1


def test_a_budget_too_small_for_one_call_writes_nothing_and_exits_2(server, judge_env, tmp_path):
    env = {**judge_env, "RAGPROOF_MAX_COST_USD": "0.000001"}
    out = tmp_path / "cases.jsonl"
    done = ragproof(
        "generate", "qa", "--corpus", CORPUS, "--out", str(out), "--count", "2", env=env
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"ragproof: generation stopped at the judge budget; no case was kept, {out} not written"
    ]
    assert server.request_count == 0 and not out.exists()
