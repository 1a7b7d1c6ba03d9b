"""Repeated trials in a real run (CONTRACT section 27): a pipeline whose answers change
between calls (a counter per question, tests/support/counting_adapter.py), run with
``--repeats 3`` on one shard and on two, gives equal results; every trial is stored
with its number, the ``repeats`` view and ``run --json``'s statistics agree with the
stored trials, and the dry run counts every trial."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ragproof_core.present.app_data import run_data
from ragproof_core.present.report_data import gather_report
from ragproof_core.store import RunStore
from tests.faults.conftest import write_jsonl
from tests.support.cli import ragproof, ragproof_exec_popen

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


@pytest.mark.slow
def test_compare_of_runs_with_repeats_pairs_the_per_case_means(dataset: Path):
    # A: 3 trials a case; B: 2. The counter's pattern gives each case's trials (recall:
    # q1 and q5 miss on their 2nd call, q3 always; exact match: only "answer 2").
    a = _run(dataset)
    b = _run(dataset, "--repeats", "2")
    done = ragproof("compare", a["run_id"], b["run_id"], "--json")
    assert done.returncode == 0, done.stderr
    compared = json.loads(done.stdout)
    assert (compared["trials_a"], compared["trials_b"]) == (TRIALS, 2)

    recall_a = np.array([1, 2 / 3, 1, 0, 1, 2 / 3])
    recall_b = np.array([1, 1 / 2, 1, 0, 1, 1 / 2])
    exact_a, exact_b = np.full(CASES, 1 / 3), np.full(CASES, 1 / 2)
    for metric, xa, xb in (
        ("retrieval.recall_at_k", recall_a, recall_b),
        ("retrieval.mrr", recall_a, recall_b),
        ("echo.exact_match", exact_a, exact_b),
    ):
        m = compared["metrics"][metric]
        d = xb - xa
        assert (m["scored_a"], m["scored_b"], m["paired"]) == (CASES, CASES, CASES), metric
        assert m["mean_a"] == pytest.approx(xa.mean(), abs=1e-12), metric
        assert m["mean_b"] == pytest.approx(xb.mean(), abs=1e-12), metric
        assert m["delta"] == pytest.approx(d.mean(), abs=1e-12), metric
        if d.std() > 0:
            expected = (1.96 + 0.8416) * d.std(ddof=1) / np.sqrt(CASES)
            assert m["mde"] == pytest.approx(expected, rel=1e-12), metric
        else:  # every case moved alike: nothing varies, any change is detected
            assert m["mde"] == pytest.approx(0.0, abs=1e-12)
    # The cases that lost, by their means: q1 and q5 each from 2/3 to 1/2.
    recall = [r for r in compared["regressions"] if r["metric"] == "retrieval.recall_at_k"]
    assert [(r["case_id"], r["value_a"], r["value_b"]) for r in recall] == [
        ("q1", pytest.approx(2 / 3), 0.5),
        ("q5", pytest.approx(2 / 3), 0.5),
    ]
    # The table says what it paired.
    table = ragproof("compare", a["run_id"], b["run_id"])
    assert table.returncode == 0, table.stderr
    assert (
        "Trials per case: A 3, B 2 (run.repeats): each case is paired by its mean over its "
        "scored trials." in table.stdout
    )


@pytest.mark.slow
def test_a_resume_redoes_only_the_cases_short_of_trials(
    dataset: Path, tmp_path: Path, store_path: Path
):
    # Ctrl-C during the 3rd answer of q3 (concurrency 1, each trial over every case in
    # turn): q0 to q2 have their 3 trials, q3 is cut short, q4 and q5 have 2.
    marker = tmp_path / "interrupted"
    config = tmp_path / "ragproof.toml"
    config.write_text(
        f"[run]\nrepeats = {TRIALS}\nconcurrency = 1\n\n"
        f'[adapter]\ntarget = "{ADAPTER}"\n'
        f'options = {{ interrupt = "question 3?#{TRIALS}", marker = "{marker}" }}\n',
        encoding="utf-8",
    )
    args = ["--dataset", str(dataset), "--config", str(config), "--metrics", METRICS]
    proc = ragproof_exec_popen("run", *args)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err
    assert marker.exists()
    stopped = re.search(r"interrupted: run (\S+) kept (\d+) of (\d+) cases", err)
    assert stopped is not None, err
    run_id = stopped.group(1)
    # Kept: the cases with every trial stored.
    assert (stopped.group(2), stopped.group(3)) == ("3", str(CASES))
    assert RunStore(store_path).get_run(run_id).status == "interrupted"

    resumed = ragproof("run", "--resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    # Only q3, q4 and q5 were asked again, each for all its trials.
    assert out["adapter_calls"] == {"retrieve": 3 * TRIALS, "answer": 3 * TRIALS}
    rows = _rows(
        store_path,
        "SELECT case_id, trial, value FROM case_results WHERE run_id = ? "
        "AND metric = 'retrieval.recall_at_k' ORDER BY case_id, trial",
        run_id,
    )
    # Each case's trials once, as a run never stopped has them: a redone case's
    # counter starts again in the resuming process.
    misses = {("q1", 2), ("q3", 1), ("q3", 2), ("q3", 3), ("q5", 2)}
    assert rows == [
        (f"q{i}", t, 0.0 if (f"q{i}", t) in misses else 1.0)
        for i in range(CASES)
        for t in range(1, TRIALS + 1)
    ]
    answers = _rows(
        store_path,
        "SELECT DISTINCT trial, answer FROM outputs WHERE run_id = ? ORDER BY trial",
        run_id,
    )
    assert answers == [(t, f"answer {t}") for t in range(1, TRIALS + 1)]
    assert out["metrics"]["retrieval.recall_at_k"]["mean"] == pytest.approx(13 / 18)
    assert out["metrics"]["retrieval.recall_at_k"]["flaky_cases"] == 2
