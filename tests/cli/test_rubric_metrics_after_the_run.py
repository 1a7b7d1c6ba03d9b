"""A run's own rubric metric after the run (issue 39, item 7): `calibrate --sample` writes
its lines and `calibrate --run --labels` reads them back, `probe` asks about it by default
and by name, as it does the shipped judge metrics. The run (tests/support/judged_run.py,
`rubric=True`) declares `custom.four`, four bands, judge-scored on q01..q06; the local judge
server answers a rubric with its best band."""

from __future__ import annotations

import json
import os

import pytest

from ragproof_core.store.run_store import RunStore
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer
from tests.support.judged_run import RELEVANCE, RUBRIC, RUBRIC_VERDICTS, write_judged_run

pytestmark = pytest.mark.slow


@pytest.fixture
def judged() -> str:
    return write_judged_run(RunStore(os.environ["RAGPROOF_STORE"]), rubric=True)


def test_calibrate_reads_back_the_labels_of_the_runs_own_rubric_metric(judged, tmp_path):
    sample = tmp_path / "to_label.jsonl"
    done = ragproof("calibrate", "--sample", "6", "--run", judged, "--out", str(sample))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in sample.read_text().splitlines()]
    own = [line for line in lines if line["metric"] == RUBRIC]
    assert sorted(line["case_id"] for line in own) == sorted(RUBRIC_VERDICTS)
    # A person fills in the file calibrate wrote: every case "most" (2/3) on the rubric.
    for line in lines:
        line["score"] = 2 / 3 if line["metric"] == RUBRIC else None
    sample.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = ragproof("calibrate", "--run", judged, "--labels", str(sample), "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["metric"]: row for row in json.loads(done.stdout)["metrics"]}
    judge_mean = sum(["none", "some", "most", "all"].index(v) / 3 for v in RUBRIC_VERDICTS.values())
    assert (rows[RUBRIC]["n_judged"], rows[RUBRIC]["n_labelled"]) == (6, 6)
    assert rows[RUBRIC]["judge_mean"] == pytest.approx(judge_mean / 6)
    assert rows[RUBRIC]["human_mean"] == pytest.approx(2 / 3)
    # A metric neither shipped nor the run's own is still refused, naming the known ones.
    stray = tmp_path / "stray.jsonl"
    stray.write_text(json.dumps({"case_id": "q01", "metric": "custom.five", "score": 1}) + "\n")
    bad = ragproof("calibrate", "--run", judged, "--labels", str(stray))
    assert bad.returncode == 1
    assert bad.stderr.startswith(f"ragproof: {stray}:1: unknown metric 'custom.five'; known: ")
    assert RUBRIC in bad.stderr and bad.stderr.count("\n") == 1


def test_probe_asks_about_the_runs_own_rubric_metric(judged):
    with JudgeServer() as server:
        env = cli_env(
            RAGPROOF_JUDGE_MODEL="openai/judge-test",
            RAGPROOF_JUDGE_API_BASE=server.url,
            OPENAI_API_KEY="sk-test-probe",
        )
        done = ragproof("probe", judged, "--metrics", RUBRIC, "--sample", "6", "--json", env=env)
        assert done.returncode == 0, done.stderr
        rows = {(r["metric"], r["perturbation"]): r for r in json.loads(done.stdout)["probes"]}
        assert {metric for metric, _ in rows} == {RUBRIC}
        # The rubric reads question and answer: padding and self-reference change what the
        # judge sees (position reorders a context it is not shown).
        assert rows[(RUBRIC, "verbosity")]["cases"] == 6
        assert rows[(RUBRIC, "position")]["cases"] == 0
        asked = [r for r in server.requests if r.prompt == "rubric"]
        assert len(asked) == 18 and server.request_count == 18
        default = ragproof("probe", judged, "--sample", "2", "--json", env=env)
        assert default.returncode == 0, default.stderr
        metrics = {r["metric"] for r in json.loads(default.stdout)["probes"]}
        assert {RUBRIC, RELEVANCE} <= metrics
