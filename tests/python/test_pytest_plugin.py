"""The pytest plugin (CONTRACT section 26), run by ``pytester``: one passing and one
failing floor, a regression against a baseline run, the store option, and the
terminal summary of the session's runs."""

from __future__ import annotations

import re

import pytest

import ragproof
from tests.conftest import FIXTURES

REGRESSION = FIXTURES / "regression"
CASES = REGRESSION / "cases.jsonl"
GOOD = REGRESSION / "ragproof_good.toml"
BAD = REGRESSION / "ragproof_bad.toml"

pytest_plugins = ("pytester",)

GATED_TESTS = f"""
import pytest

from ragproof.testing import assert_floors, assert_no_regression


@pytest.fixture(scope="module")
def runs(ragproof_evaluate):
    baseline = ragproof_evaluate({str(CASES)!r}, config={str(GOOD)!r})
    worse = ragproof_evaluate({str(CASES)!r}, config={str(BAD)!r})
    return baseline, worse


def test_floor_holds(runs):
    assert_floors(runs[0], config="passing.toml")


def test_floor_broken(runs):
    assert_floors(runs[0], config="failing.toml")


def test_no_regression(runs):
    assert_no_regression(runs[1], runs[0])
"""


@pytest.fixture
def gated(pytester):
    pytester.makepyfile(test_gated=GATED_TESTS)
    pytester.makefile(".toml", passing='[gate]\n"retrieval.mrr" = { min = 0.5 }\n')
    pytester.makefile(
        ".toml",
        failing='[gate]\n"retrieval.mrr" = { min = 0.5 }\n'
        '"retrieval.precision_at_k" = { min = 0.5 }\n'
        '"generation.citation_validity" = { max = 0.5, every_case = true }\n',
    )
    return pytester


def test_floors_regression_store_option_and_summary(gated, tmp_path):
    store = tmp_path / "gate-store"
    # In a process of its own: an inline session's modules (numpy, Dagster) are unloaded
    # after it, and a C extension cannot be loaded twice in one process.
    result = gated.runpytest_subprocess("--ragproof-store", str(store), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    # Every broken floor with its figures; the floor that holds is not listed.
    broken = re.search(r"AssertionError: run (\S+): 2 of 3 floors broken:", out)
    assert broken, out
    assert re.search(r"FAIL  retrieval\.precision_at_k  mean >= 0\.5  0\.2000 over 20 scored", out)
    assert re.search(r"FAIL  generation\.citation_validity  every case <= 0\.5  .*20 failing", out)
    assert not re.search(r"E\s+PASS", out)
    # The regressed metrics with their figures.
    regressed = re.search(r"AssertionError: run (\S+) against baseline (\S+): (\d+) metrics", out)
    assert regressed, out
    assert re.search(r"E\s+\S+ worse by \d\.\d{4} \(mean", out), out
    # The runs went to the store the option named.
    baseline_id = broken.group(1)
    assert regressed.group(2) == baseline_id
    assert ragproof.load_run(baseline_id, store=store).status == "completed"
    # The session's runs, their ids and the metrics that failed.
    summary = out[out.index("ragproof runs") :]
    assert f"store: {store}" in summary
    assert re.search(
        rf"{baseline_id}  completed  failed: "
        r"retrieval\.precision_at_k, generation\.citation_validity",
        summary,
    ), summary
    assert re.search(rf"{regressed.group(1)}  completed  failed: retrieval\.", summary), summary
