"""A config's rubric metrics calibrate like the shipped prompts: per_metric, in combined
mode (one combined request per fixture, the rubric's part in it) and with a jury."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragproof_core.calibration.calibrate import calibrate
from ragproof_core.calibration.calibrate_combined import calibrate_combined
from ragproof_core.calibration.fixture_files import load_metric_fixtures
from ragproof_core.config.settings import load_config
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.metrics.custom import custom_metric, give_rubrics
from tests.core.judge.conftest import run
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning")

CONFIG = Path(__file__).resolve().parents[2] / "fixtures" / "custom_metrics" / "ragproof.toml"
JURY = "openai/judge-a,openai/judge-b"


def rubrics():
    (table,) = [t for t in load_config(CONFIG).metrics if t.rubric is not None]
    return table, [(custom_metric(table), load_metric_fixtures(table.fixtures, table.name))]


def judge_of(server: JudgeServer, models: str, mode: str):
    table, extra = rubrics()
    judge = make_judge(JudgeEnv(model=models, api_base=server.url, mode=mode), None)
    give_rubrics(judge, [table])
    return judge, extra


def tone(report) -> tuple[int, int, int]:
    (found,) = [p for p in report.prompts if p.prompt == "custom.tone"]
    return found.n, found.exact, found.within


def test_a_rubric_calibrates_in_combined_mode_and_with_a_jury(server: JudgeServer) -> None:
    # The server answers a rubric with its best band ("yes") unless the answer refuses:
    # t1 (human 1) and t3 (human 0.5, "partly") get "yes", t2's "I don't know." gets "no"
    # (human 0). So 2 of 3 exact, all 3 within a band, in every mode.
    judge, extra = judge_of(server, "openai/judge-test", "combined")
    report = run(calibrate_combined(judge, extra=extra))
    rubric_requests = [r for r in server.requests if tuple(r.parts) == ("custom.tone",)]
    assert len(rubric_requests) == 3
    assert {r.prompt for r in server.requests} == {"combined"}
    assert server.request_count == 12 + 3
    assert report.mode == "combined"
    assert report.prompts[-1].prompt == "custom.tone"
    assert tone(report) == (3, 2, 3)

    # A jury, per_metric: each model scores every fixture once, the jury's result decides.
    server.reset()
    jury, extra = judge_of(server, JURY, "per_metric")
    calibrated = run(calibrate(jury, extra=extra))
    assert tone(calibrated.jury) == (3, 2, 3)
    assert {m: tone(r) for m, r in calibrated.models.items()} == {
        "openai/judge-a": (3, 2, 3),
        "openai/judge-b": (3, 2, 3),
    }
    assert sum(r.prompt == "rubric" for r in server.requests) == 2 * 3

    # A jury in combined mode: every model asks every combined request.
    server.reset()
    jury, extra = judge_of(server, JURY, "combined")
    report = run(calibrate_combined(jury, extra=extra))
    assert server.request_count == 2 * (12 + 3)
    assert tone(report) == (3, 2, 3)
    assert report.judge_model == JURY
