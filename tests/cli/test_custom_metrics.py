"""Metrics of your own end to end (CONTRACT section 21): a rubric metric judged by the local
judge server and two function metrics, through `ragproof run`, compare, report, sql and
calibrate. The fixture (tests/fixtures/custom_metrics): three recorded cases; c2's metadata
makes cites_expected raise, c3 has no answer."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import REPO
from tests.support.cli import ragproof

pytestmark = pytest.mark.slow

FIXTURE = REPO / "tests" / "fixtures" / "custom_metrics"
CUSTOM = ("custom.tone", "custom.answer_words", "custom.cites_expected")

# server and judge_env: tests/assets/conftest.py (through tests/cli/conftest.py)


def _ok(done):
    assert done.returncode == 0, done.stderr
    return done


def _run(judge_env, config, *extra):
    done = _ok(
        ragproof(
            "run",
            "--dataset",
            str(FIXTURE / "cases.jsonl"),
            "--config",
            str(config),
            "--metrics",
            "custom.*",
            "--json",
            *extra,
            env=judge_env,
        )
    )
    return json.loads(done.stdout)


def test_custom_metrics_are_scored_stored_compared_reported_and_calibrated(
    server, judge_env, store_path, tmp_path
):
    first = _run(judge_env, FIXTURE / "ragproof.toml")
    assert first["status"] == "completed"
    metrics = first["metrics"]
    assert list(metrics) == list(CUSTOM)  # --metrics custom.* selects only them
    # The rubric: c1 and c2 answered (best band: 1.0 each); c3 has no answer: skipped.
    assert (metrics["custom.tone"]["mean"], metrics["custom.tone"]["scored"]) == (1.0, 2)
    assert metrics["custom.tone"]["skipped"] == 1
    assert sorted(r.prompt for r in server.requests) == ["rubric", "rubric"]
    # answer_words: 1/1 and 1/6; None for c3 skips it.
    words = metrics["custom.answer_words"]
    assert (words["scored"], words["skipped"], words["errored"]) == (2, 1, 0)
    assert words["mean"] == pytest.approx((1.0 + 1 / 6) / 2)
    # cites_expected raised for c2: that metric's error for that case; the run completed.
    cites = metrics["custom.cites_expected"]
    assert (cites["scored"], cites["errored"], cites["mean"]) == (2, 1, 0.5)

    run_a = first["run_id"]
    rows = _ok(
        ragproof(
            "sql",
            "SELECT r.metric, r.case_id, r.status, r.reason, m.family, m.higher_is_better, "
            "m.judged FROM case_results r JOIN metrics m USING (metric) "
            f"WHERE r.run_id = '{run_a}' AND r.status <> 'scored' ORDER BY r.metric, r.case_id",
            "--json",
            env=judge_env,
        )
    )
    assert json.loads(rows.stdout) == [
        {
            "metric": "custom.answer_words",
            "case_id": "c3",
            "status": "skipped",
            "reason": "metric returned no value",
            "family": "custom",
            "higher_is_better": True,
            "judged": False,
        },
        {
            "metric": "custom.cites_expected",
            "case_id": "c2",
            "status": "error",
            "reason": "ValueError: cannot score 'How do I stop a loop early?'",
            "family": "custom",
            "higher_is_better": False,
            "judged": False,
        },
        {
            "metric": "custom.tone",
            "case_id": "c3",
            "status": "skipped",
            "reason": "adapter produced no answer",
            "family": "custom",
            "higher_is_better": True,
            "judged": True,
        },
    ]

    # The same metrics with the rubric reworded: a different prompt, so compare refuses.
    changed = tmp_path / "changed"
    shutil.copytree(FIXTURE, changed)
    config = changed / "ragproof.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("Is the answer polite", "Is the answer kind"),
        encoding="utf-8",
    )
    run_b = _run(judge_env, config)["run_id"]
    refused = ragproof("compare", run_a, run_b, env=judge_env)
    assert refused.returncode == 1
    assert "prompt custom.tone hash" in refused.stderr
    compared = _ok(
        ragproof("compare", run_a, run_b, "--allow-mixed-judges", "--json", env=judge_env)
    )
    directions = {
        name: m["higher_is_better"] for name, m in json.loads(compared.stdout)["metrics"].items()
    }
    assert directions == {
        "custom.tone": True,
        "custom.answer_words": True,
        "custom.cites_expected": False,
    }

    report = tmp_path / "report.html"
    _ok(ragproof("report", run_a, "--out", str(report), env=judge_env))
    html = report.read_text(encoding="utf-8")
    for name in CUSTOM:
        assert name in html

    server.reset()
    calibrated = ragproof(
        "calibrate", "--config", str(FIXTURE / "ragproof.toml"), "--json", env=judge_env
    )
    assert calibrated.returncode in (0, 1), calibrated.stderr
    tone = json.loads(calibrated.stdout)["prompts"]["custom.tone"]
    # The server gives the best band unless the answer refuses: t1 (1) and t2 (0) agree,
    # t3 (human 0.5, judge 1) is one band off.
    assert (tone["n"], tone["exact"], tone["within"]) == (3, 2, 3)
