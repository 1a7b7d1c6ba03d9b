"""Repeated trials in a real run (CONTRACT section 27): a pipeline whose answers change
between calls (a counter per question, tests/support/counting_adapter.py), run with
``--repeats 3`` on one shard and on two, gives equal results; every trial is stored
with its number, the ``repeats`` view and ``run --json``'s statistics agree with the
stored trials, and the dry run counts every trial."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ragproof_core.present.app_data import run_data
from ragproof_core.present.report_data import gather_report
from ragproof_core.store import RunStore
from tests.faults.conftest import write_jsonl
from tests.support.cli import ragproof

CASES = 6
TRIALS = 3
METRICS = "retrieval.recall_at_k,retrieval.mrr,echo.exact_match"
ADAPTER = "tests.support.counting_adapter:CountingAdapter"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "question": f"question {i}?",
            "expected_source_ids": [f"d{i}"],
            "expected_answer": "answer 2",
        }
        for i in range(CASES)
    ]
    return write_jsonl(tmp_path / "cases.jsonl", rows)


def _run(dataset: Path, *extra: str) -> dict:
    done = ragproof(
        "run",
        "--dataset",
        str(dataset),
        "--adapter",
        ADAPTER,
        "--metrics",
        METRICS,
        "--repeats",
        str(TRIALS),
        "--json",
        *extra,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _rows(store: Path, sql: str, run_id: str) -> list[tuple]:
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        return con.execute(sql, [run_id]).fetchall()


def _same(a: dict, b: dict) -> None:
    """Equal statistics, to the last bits of a sum taken in another order (the shards'
    files are read in another order)."""
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].keys() == b[name].keys(), name
        for key, value in a[name].items():
            other = b[name][key]
            if isinstance(value, float | list):
                assert other == pytest.approx(value, rel=1e-12, abs=1e-15), (name, key)
            else:
                assert other == value, (name, key)


@pytest.mark.slow
def test_trials_on_one_shard_and_two_are_equal_and_their_statistics_exact(
    dataset: Path, store_path: Path
):
    one = _run(dataset)
    two = _run(dataset, "--shards", "2")
    _same(one["metrics"], two["metrics"])

    results_sql = (
        "SELECT case_id, metric, trial, status, value FROM case_results WHERE run_id = ? "
        "ORDER BY case_id, metric, trial"
    )
    rows_one = _rows(store_path, results_sql, one["run_id"])
    assert rows_one == _rows(store_path, results_sql, two["run_id"])
    assert len(rows_one) == CASES * TRIALS * 3
    assert {r[2] for r in rows_one} == {1, 2, 3}
    # The counter's pattern: case 1 misses its source on its 2nd call, case 3 always.
    recall = {
        (case, trial): value
        for case, metric, trial, _, value in rows_one
        if metric == "retrieval.recall_at_k"
    }
    assert [recall["q1", t] for t in (1, 2, 3)] == [1.0, 0.0, 1.0]
    assert [recall["q3", t] for t in (1, 2, 3)] == [0.0, 0.0, 0.0]
    # Each trial's answer is its own: the n-th call says "answer n".
    outputs = _rows(
        store_path,
        "SELECT trial, answer FROM outputs WHERE run_id = ? AND case_id = 'q0' ORDER BY trial",
        one["run_id"],
    )
    assert outputs == [(1, "answer 1"), (2, "answer 2"), (3, "answer 3")]

    # The repeats view, one row per case and metric.
    view = _rows(
        store_path,
        "SELECT case_id, trials, scored, mean, min, max, passes, flaky FROM repeats "
        "WHERE run_id = ? AND metric = 'retrieval.recall_at_k' ORDER BY case_id",
        one["run_id"],
    )
    assert view[1] == ("q1", 3, 3, pytest.approx(2 / 3), 0.0, 1.0, 2, True)
    assert view[3] == ("q3", 3, 3, 0.0, 0.0, 0.0, 0, False)
    assert sum(row[-1] for row in view) == 2  # q1 and q5

    # run --json against the stored trials, computed here with numpy.
    matrix = np.array([[recall[f"q{i}", t] for t in (1, 2, 3)] for i in range(CASES)])
    means = matrix.mean(axis=1)
    stats = one["metrics"]["retrieval.recall_at_k"]
    assert stats["mean"] == pytest.approx(means.mean())
    assert stats["cases"] == CASES
    assert stats["scored"] == CASES * TRIALS
    assert stats["within_case_sd"] == pytest.approx(np.sqrt(matrix.var(axis=1, ddof=1).mean()))
    assert stats["between_case_sd"] == pytest.approx(means.std(ddof=1))
    assert stats["flaky_cases"] == 2
    assert stats["k"] == TRIALS
    passes = matrix.sum(axis=1)
    assert stats["pass_at_k"] == pytest.approx(np.mean(passes > 0))
    assert stats["pass_hat_k"] == pytest.approx(np.mean(passes == TRIALS))
    low, high = stats["ci"]
    assert low <= stats["mean"] <= high
    # The adapter was called once per trial.
    assert one["adapter_calls"] == {"retrieve": CASES * TRIALS, "answer": CASES * TRIALS}

    # The report's and the browser's trial strips: flaky cases first, trials in order.
    store = RunStore(store_path)
    record = store.get_run(one["run_id"])
    for shown in (
        gather_report(store, one["run_id"])["trials"],
        run_data(store, record, [record])["trials"],
    ):
        assert shown["repeats"] == TRIALS
        # Every case is flaky on echo.exact_match (only its 2nd answer matches).
        assert shown["flaky_total"] == CASES
        assert [c["id"] for c in shown["cases"]] == [f"q{i}" for i in range(CASES)]
        strips = {c["id"]: c["metrics"]["retrieval.recall_at_k"] for c in shown["cases"]}
        assert strips["q1"] == {"trials": [1.0, 0.0, 1.0], "flaky": True}
        assert strips["q3"] == {"trials": [0.0, 0.0, 0.0], "flaky": False}
        assert shown["cases"][0]["metrics"]["echo.exact_match"]["trials"] == [0.0, 1.0, 0.0]


@pytest.mark.slow
def test_the_dry_run_and_the_summary_count_trials(dataset: Path):
    dry = ragproof(
        "run",
        "--dataset",
        str(dataset),
        "--adapter",
        ADAPTER,
        "--metrics",
        METRICS,
        "--repeats",
        str(TRIALS),
        "--dry-run",
        "--json",
    )
    assert dry.returncode == 0, dry.stderr
    estimate = json.loads(dry.stdout)
    assert estimate["trials"] == TRIALS
    assert estimate["adapter_calls"] == {"retrieve": CASES * TRIALS, "answer": CASES * TRIALS}

    table = ragproof(
        "run",
        "--dataset",
        str(dataset),
        "--adapter",
        ADAPTER,
        "--metrics",
        METRICS,
        "--repeats",
        str(TRIALS),
        "--pass-k",
        "2",
    )
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if line.startswith("metric"))
    assert header.split()[-2:] == ["trials", "flaky"]
    recall = next(
        line for line in table.stdout.splitlines() if line.startswith("retrieval.recall_at_k")
    )
    assert recall.split()[-2:] == [str(TRIALS), "2"]
