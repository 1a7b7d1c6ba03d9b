"""Claim diagnostics and nuggets from the command line (CONTRACT section 20), against the
local judge server: the diagnosis under the summary, in ``show`` and ``--json``, the
claims in the report, compare's ranking, and ``ragproof generate nuggets``.

tests/fixtures/diagnostics (its README): the server's claims are sentences, and a text
states a claim when it holds half the claim's words of 4+ letters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.support.cli import ragproof

pytestmark = pytest.mark.slow

FOLDER = FIXTURES / "diagnostics"
METRICS = (
    "generation.groundedness,generation.claim_*,retrieval.claim_recall,"
    "retrieval.context_precision,generation.context_utilization,generation.hallucination,"
    "generation.self_knowledge,generation.noise_sensitivity,generation.nugget_recall"
)


def run(env, tmp_path: Path, outputs: str) -> dict:
    config = tmp_path / f"{outputs}.toml"
    config.write_text(
        "[run]\nk = 2\n[adapter]\n"
        'target = "ragproof_core.adapters.recorded:RecordedAdapter"\n'
        f'options = {{ path = "{FOLDER / outputs}" }}\n',
        encoding="utf-8",
    )
    args = ("run", "--dataset", str(FOLDER / "cases.jsonl"), "--config", str(config))
    done = ragproof(*args, "--metrics", METRICS, env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_the_diagnosis_in_run_show_json_report_and_compare(server, judge_env, tmp_path):
    good = run({**judge_env, "RAGPROOF_JUDGE_MODE": "combined"}, tmp_path, "outputs.jsonl")
    assert server.request_count == 3  # one combined request a case
    run_a = good.stdout.split()[1].rstrip(":")
    # d1 (tests/core/metrics/test_diagnostics.py works it out): noise 1/2, utilization 1/2,
    # retrieval recall 1, hallucination 0; d3: hallucination 1, recall 1, utilization 0.
    lines = good.stdout.splitlines()
    start = lines.index(
        "diagnosis: the run loses most to use of evidence, not clearly ahead of invention "
        "(their intervals overlap)"
    )
    rows = [line.split()[:4] for line in lines[start + 3 : start + 7]]
    assert rows == [
        ["use", "of", "evidence", "0.7500"],
        ["invention", "0.5000", "[0.0000,", "1.0000]"],
        ["noise", "0.2500", "[0.0000,", "0.5000]"],
        ["retrieval", "0.0000", "[0.0000,", "0.0000]"],
    ]
    assert lines[start + 7] == (
        "  look at: the generator ignored evidence it was given: prompt, context order, "
        "context length"
    )
    shown = ragproof("show", run_a, env=judge_env)
    assert lines[start] in shown.stdout.splitlines()
    as_json = json.loads(ragproof("show", run_a, "--json", env=judge_env).stdout)
    assert as_json["diagnosis"]["lead"] == "use of evidence"
    assert [a["area"] for a in as_json["diagnosis"]["areas"]] == [
        "use of evidence", "invention", "noise", "retrieval",
    ]  # fmt: skip

    # The report opens with the diagnosis; a case shown in full lists its claims.
    report = tmp_path / "report.html"
    assert ragproof("report", run_a, "--out", str(report), env=judge_env).returncode == 0
    data = json.loads(
        re.search(
            r'<script id="report-data" type="application/json">(.*?)</script>',
            report.read_text(encoding="utf-8"),
            re.DOTALL,
        ).group(1)
    )
    assert data["diagnosis"]["lead"] == "use of evidence"
    claims = data["details"]["d1"]["claims"]
    assert [(c["kind"], c["chunks"]) for c in claims["response"]] == [
        ("grounded", ["p1"]), ("noise", ["p2"]),
    ]  # fmt: skip
    assert [(c["kind"], c["chunks"]) for c in claims["reference"]] == [
        ("used", ["p1"]), ("ignored", ["p3"]),
    ]  # fmt: skip

    # show --case lists them too, each with the chunks that support it.
    case = ragproof("show", run_a, "--case", "d1", env=judge_env).stdout.splitlines()
    at = case.index("claims (claim_check):")
    assert [line.split()[:2] for line in case[at + 3 : at + 7]] == [
        ["answer", "grounded"], ["answer", "noise"], ["reference", "used"],
        ["reference", "ignored"],
    ]  # fmt: skip
    assert case[at + 6].rstrip().endswith("p3")

    # B invents on d1 and d3 retrieves nothing useful: compare ranks where B loses more.
    worse = run({**judge_env, "RAGPROOF_JUDGE_MODE": "combined"}, tmp_path, "outputs_worse.jsonl")
    run_b = worse.stdout.split()[1].rstrip(":")
    compared = ragproof("compare", run_a, run_b, env=judge_env)
    assert compared.returncode == 0, compared.stderr
    out = compared.stdout.splitlines()
    head = out.index(
        "Diagnosis changes (where B loses more than A first; loss = the share of claims lost):"
    )
    # Paired: retrieval recall 1, 1 -> 1, 0; utilization (d1 alone: d3 retrieves no
    # support in B) 0.5 -> 0; hallucination 0, 1 -> 0.5, 1; noise 0.5, 0 -> 0.5, 0.
    assert [line.split()[0] for line in out[head + 3 : head + 7]] == [
        "retrieval", "use", "invention", "noise",
    ]  # fmt: skip
    ranked = json.loads(ragproof("compare", run_a, run_b, "--json", env=judge_env).stdout)
    assert [(c["area"], c["paired"], c["change"]) for c in ranked["diagnosis"]] == [
        ("retrieval", 2, 0.5), ("use of evidence", 1, 0.5), ("invention", 2, 0.25),
        ("noise", 2, 0.0),
    ]  # fmt: skip


def test_generate_nuggets_writes_them_and_a_warm_rerun_is_byte_identical(
    server, judge_env, tmp_path
):
    cases = FIXTURES / "generate_nuggets" / "cases.jsonl"
    out = tmp_path / "with_nuggets.jsonl"
    done = ragproof(
        "generate", "nuggets", "--dataset", str(cases), "--out", str(out), env=judge_env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"wrote nuggets for 2 cases to {out} (3 nuggets, 2 vital; seed 0, judge openai/judge-test)",
        "  copied unchanged: 1 with nuggets already, 2 without an expected_answer",
    ]
    assert server.request_count == 2
    first = out.read_bytes()
    lines = first.decode().split("\n")
    assert lines[1:4] == cases.read_text(encoding="utf-8").split("\n")[1:4]
    assert json.loads(lines[0])["nuggets"] == [
        {"text": "30 days.", "vital": True}, {"text": "A receipt is needed.", "vital": False},
    ]  # fmt: skip
    again = ragproof(
        "generate", "nuggets", "--dataset", str(cases), "--out", str(out), "--json", env=judge_env
    )
    assert server.request_count == 2  # every reply from the judge cache
    assert out.read_bytes() == first
    summary = json.loads(again.stdout)
    assert (summary["status"], summary["written"], summary["judge"]["cache_hits"]) == (
        "completed", {"cases": 2, "nuggets": 3, "vital": 2}, 2,
    )  # fmt: skip


def test_generate_nuggets_bad_input_exits_1_before_any_call(server, judge_env, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "Q?", "nuggets": [{"text": "x"}]}\n', encoding="utf-8")
    done = ragproof(
        "generate", "nuggets", "--dataset", str(bad), "--out", str(tmp_path / "o.jsonl"),
        env=judge_env,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == f"ragproof: {bad}:1: nuggets[0].vital: missing required field\n"
    no_judge = {k: v for k, v in judge_env.items() if k != "RAGPROOF_JUDGE_MODEL"}
    done = ragproof(
        "generate", "nuggets", "--dataset", str(FOLDER / "cases.jsonl"),
        "--out", str(tmp_path / "o.jsonl"), env=no_judge,
    )  # fmt: skip
    assert done.returncode == 1
    assert "generate nuggets needs a judge model: set RAGPROOF_JUDGE_MODEL" in done.stderr
    assert server.request_count == 0
    assert not (tmp_path / "o.jsonl").exists()
