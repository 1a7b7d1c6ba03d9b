"""`ragproof probe` as a user runs it, against the local judge server scripted to change
its verdict on padded answers (odd-numbered cases) and reversed contexts (even ones):
the --json shape of CONTRACT section 22, the changed counts exactly as scripted, the
probe stored (view probes), a second probe served from the judge cache, bad input."""

from __future__ import annotations

import json
import os

import pytest

from ragproof_core.calibration.binomial import wilson_interval
from ragproof_core.calibration.labels import judge_scores
from ragproof_core.calibration.probe import probe_sample
from ragproof_core.store.run_store import RunStore
from tests.support.cli import cli_env, ragproof
from tests.support.judge_server import JudgeServer
from tests.support.judged_run import GROUNDEDNESS, RELEVANCE, swayed_judge, write_judged_run
from tests.support.stores import StoreUnderTest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swayed():
    with JudgeServer(responder=swayed_judge) as server:
        yield server


def test_probe_reports_and_stores_the_scripted_changes(swayed) -> None:
    env = cli_env(
        RAGPROOF_JUDGE_MODEL="openai/judge-test",
        RAGPROOF_JUDGE_API_BASE=swayed.url,
        OPENAI_API_KEY="sk-test-probe",
    )
    store = RunStore(os.environ["RAGPROOF_STORE"])
    write_judged_run(store)
    chosen = probe_sample(judge_scores(store.case_results_frame("judged")), [RELEVANCE], 10, 4)
    odd = sum(int(c[1:]) % 2 for c in chosen[RELEVANCE])

    done = ragproof(
        "probe", "judged", "--metrics", "generation.answer_*", "--sample", "10", "--seed", "4",
        "--json", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == ["run_id", "probes"]
    assert result["run_id"] == "judged"
    assert [list(row)[:4] for row in result["probes"]] == [
        ["metric", "perturbation", "cases", "changed"]
    ] * 3
    rows = {(r["metric"], r["perturbation"]): (r["cases"], r["changed"]) for r in result["probes"]}
    assert rows == {
        (RELEVANCE, "verbosity"): (10, odd),
        (RELEVANCE, "position"): (0, 0),
        (RELEVANCE, "self_reference"): (10, 0),
    }
    verbosity = result["probes"][0]
    assert verbosity["share"] == odd / 10
    assert verbosity["interval"] == pytest.approx(list(wilson_interval(odd, 10)), abs=1e-15)
    assert swayed.request_count == 30  # 10 unperturbed, 10 padded, 10 self-referencing

    # Every metric the judge scored; the relevance questions come from the cache now.
    done = ragproof("probe", "judged", "--sample", "10", "--seed", "4", env=env)
    assert done.returncode == 0, done.stderr
    assert swayed.request_count == 30 + 32  # groundedness: 8 unperturbed, 3 x 8 perturbed
    assert "probe: 32 judge request(s), 30 verdict(s) from the cache" in done.stderr
    table = done.stdout.splitlines()
    position = next(
        line.split() for line in table if line.split()[:2] == [GROUNDEDNESS, "position"]
    )
    assert position[2:5] == ["8", "4", "50.0%"]
    latest = store.probes("judged")
    assert [(r["metric"], r["perturbation"], r["cases"], r["changed"]) for r in latest] == [
        (GROUNDEDNESS, "verbosity", 8, 0),
        (GROUNDEDNESS, "position", 8, 4),
        (GROUNDEDNESS, "self_reference", 8, 0),
        (RELEVANCE, "verbosity", 10, odd),
        (RELEVANCE, "position", 0, 0),
        (RELEVANCE, "self_reference", 10, 0),
    ]
    assert {r["judge_model"] for r in latest} == {"openai/judge-test"}
    assert len(store.probes("judged", latest=False)) == 9  # both probes kept
    stored = StoreUnderTest("local", os.environ["RAGPROOF_STORE"])
    assert stored.query("SELECT count(DISTINCT probe_id), count(*) FROM probes") == [(2, 9)]

    # Bad input: one line, exit 1, nothing stored or asked.
    before = stored.snapshot()
    for args, message in [
        (("--metrics", "generation.nope"), "ragproof: --metrics: metric 'generation.nope'"),
        (("--metrics", "retrieval.mrr"), "ragproof: --metrics: the judge scored none of"),
        (("--sample", "0"), "ragproof: --sample must be at least 1, got 0"),
    ]:
        bad = ragproof("probe", "judged", *args, env=env)
        assert bad.returncode == 1
        assert bad.stderr.startswith(message) and bad.stderr.count("\n") == 1, bad.stderr
    other = ragproof("probe", "judged", env={**env, "RAGPROOF_JUDGE_MODEL": "openai/other"})
    assert other.returncode == 1
    assert "was judged by openai/judge-test" in other.stderr
    assert stored.snapshot() == before
    assert swayed.request_count == 62
