"""Judge modes through the command line (CONTRACT section 12), against the local judge server.

The recorded fixture asks 15 judge questions in per_metric mode (see
test_cli_judge.py) over four cases, so combined mode sends 4 requests.
A fully cached re-run, ``show``, ``compare``, ``sql`` and ``report`` never import LiteLLM.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.assets.expected import RECORDED, RUN_ARGS
from tests.conftest import REPO
from tests.support.cli import ragproof

pytestmark = pytest.mark.slow


# server and judge_env: tests/assets/conftest.py


def _run(env, *args):
    done = ragproof(*args, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_mode_from_the_config_table_and_from_the_environment(server, judge_env, tmp_path):
    config = tmp_path / "ragproof.toml"
    config.write_text(
        (RECORDED / "ragproof.toml")
        .read_text(encoding="utf-8")
        .replace('path = "outputs.jsonl"', f'path = "{RECORDED / "outputs.jsonl"}"')
        + '\n[judge]\nmode = "combined"\n',
        encoding="utf-8",
    )
    args = ("run", "--dataset", str(RECORDED / "cases.jsonl"), "--config", str(config), "--json")
    combined = _run(judge_env, *args)
    assert server.request_count == 4
    assert {r.prompt for r in server.requests} == {"combined"}
    assert (combined["judge"]["mode"], combined["judge"]["requests"]) == ("combined", 4)

    # RAGPROOF_JUDGE_MODE wins over the table.
    server.reset()
    per_metric = _run({**judge_env, "RAGPROOF_JUDGE_MODE": "per_metric"}, *args)
    assert server.request_count == 15
    assert (per_metric["judge"]["mode"], per_metric["judge"]["requests"]) == ("per_metric", 15)
    # The server's verdicts agree, so the two modes' summaries are equal.
    assert per_metric["metrics"] == combined["metrics"]

    # Different modes are different prompt hashes: compare refuses to mix them.
    refused = ragproof("compare", per_metric["run_id"], combined["run_id"], env=judge_env)
    assert refused.returncode == 1
    assert "prompt combined missing in A" in refused.stderr
    # One sentence naming the mode before the hashes, then one saying how to go ahead.
    assert refused.stderr.startswith(
        f"ragproof: refusing to compare: runs {per_metric['run_id']} and {combined['run_id']} "
        "were judged differently: judge mode differs: per_metric vs combined; prompt "
    )
    assert refused.stderr.endswith(
        "Their judge scores are not comparable. Pass --allow-mixed-judges to compare anyway.\n"
    )


def test_a_cached_rerun_sends_nothing_and_show_compare_sql_report_import_no_litellm(
    server, judge_env, tmp_path
):
    env = {**judge_env, "RAGPROOF_JUDGE_MODE": "combined"}
    first = _run(env, *RUN_ARGS, "--json")
    assert server.request_count == 4
    # The rerun itself imports LiteLLM once, for the credential check every judged run
    # makes before anything is stored (CONTRACT section 24); the readers never do.
    run_id = _run(env, *RUN_ARGS, "--json")["run_id"]
    # Fully cached: the second run sent nothing.
    assert server.request_count == 4
    script = (
        "import io, json, sys, contextlib\n"
        "from ragproof_cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['show', {run_id!r}]) == 0\n"
        f"    assert main(['compare', {first['run_id']!r}, {run_id!r}, '--json']) == 0\n"
        "    assert main(['sql', 'select count(*) from case_results', '--json']) == 0\n"
        f"    assert main(['report', {run_id!r}, '--out', {str(tmp_path / 'r.html')!r}]) == 0\n"
        "print(json.dumps({'litellm': 'litellm' in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard, not a timing
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["litellm"] is False


def test_dry_run_counts_one_question_per_case_in_combined_mode(server, judge_env):
    env = {**judge_env, "RAGPROOF_JUDGE_MODE": "combined"}
    estimate = json.loads(ragproof(*RUN_ARGS, "--dry-run", "--json", env=env).stdout)
    assert (estimate["requests"], estimate["cached_requests"], estimate["requests_to_send"]) == (
        4,
        0,
        4,
    )
    assert server.request_count == 0
    per_metric = json.loads(ragproof(*RUN_ARGS, "--dry-run", "--json", env=judge_env).stdout)
    assert per_metric["requests"] == 15


def test_calibrate_checks_the_combined_prompt_on_the_combined_fixtures(server, judge_env):
    done = ragproof("calibrate", "--mode", "combined", "--json", env=judge_env)
    report = json.loads(done.stdout)
    # One request per combined fixture. The server calls every answer complete, so
    # completeness agrees exactly on 6 of 12 (50% < 70%): calibration fails, exit 1.
    assert server.request_count == 12
    assert (report["mode"], report["passed"], done.returncode) == ("combined", False, 1)
    assert report["prompts"]["completeness"]["exact"] == 6
    assert report["prompts"]["refusal"]["kappa_quadratic"] == 1.0
    # context_relevance rides in the same requests and is reported like the others
    # (the server's word-overlap grades: tests/core/calibration/test_calibrate_combined.py).
    context = report["prompts"]["context_relevance"]
    assert (context["n"], context["exact"], context["within"]) == (12, 7, 12)
    assert context["confusion"]["matrix"] == [[0, 0, 0], [1, 5, 2], [0, 2, 2]]
    # task_completion too, every combined fixture's answer carrying an agent's steps, and
    # nugget_support last (every fixture carries nuggets).
    assert all(
        {"context_relevance", "task_completion"} <= set(r.parts) and r.parts[-1] == "nugget_support"
        for r in server.requests
    )
    assert report["prompts"]["task_completion"]["exact"] == 7
