"""Sharded runs (CONTRACT section 8): `ragproof run --shards N` fans the cases out into
N Dagster steps that the multiprocess executor runs as separate processes; results
equal the unsharded run's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from ragproof_core.metrics.registry import METRIC_NAMES
from tests.assets.expected import RUN_ARGS, assert_summary
from tests.faults.conftest import write_jsonl
from tests.support.cli import ragproof

SHARD_STEPS = [f"evaluate_cases.evaluate_shard[shard_{i:04d}]" for i in range(3)]


def _rows(store: Path, sql: str, params: list) -> list[tuple]:
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        return con.execute(sql, params).fetchall()


def _case_results(store: Path, run_id: str) -> list[tuple]:
    return _rows(
        store,
        "select case_id, metric, status, value, reason, judge_raw_json from case_results "
        "where run_id = ? order by case_id, metric",
        [run_id],
    )


def _summaries(store: Path, run_id: str) -> list[tuple]:
    return _rows(
        store,
        "select metric, mean, p50, p95, scored, skipped, errored, not_applicable, judge_errors "
        "from metric_summaries where run_id = ? order by metric",
        [run_id],
    )


def _step_events(run_id: str) -> list[dg.DagsterEvent]:
    """The run's step events in order, from the persistent instance's event log."""
    with dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"]) as instance:
        (run,) = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": run_id}))
        return [
            e.dagster_event
            for e in instance.all_logs(run.run_id)
            if e.dagster_event is not None and e.dagster_event.step_key is not None
        ]


def _step_pids(run_id: str) -> dict[str, int]:
    """Step key -> the process that ran it."""
    return {e.step_key: e.pid for e in _step_events(run_id) if e.event_type_value == "STEP_START"}


@pytest.mark.slow
def test_three_shards_give_the_unsharded_results_from_three_processes(store_path: Path):
    one = ragproof(*RUN_ARGS, "--json")
    three = ragproof(*RUN_ARGS, "--shards", "3", "--json")
    assert one.returncode == 0, one.stderr
    assert three.returncode == 0, three.stderr
    run_one, run_three = json.loads(one.stdout), json.loads(three.stdout)
    assert_summary(run_three["metrics"])
    assert run_three["metrics"] == run_one["metrics"]

    assert _case_results(store_path, run_three["run_id"]) == _case_results(
        store_path, run_one["run_id"]
    )
    assert len(_case_results(store_path, run_one["run_id"])) == 6 * len(METRIC_NAMES)
    assert _summaries(store_path, run_three["run_id"]) == _summaries(store_path, run_one["run_id"])
    # One file per shard; the unsharded run wrote one whole file.
    sharded = store_path / "runs" / run_three["run_id"]
    assert sorted(p.name for p in sharded.glob("case_results*.parquet")) == [
        f"case_results-shard-{i:04d}.parquet" for i in range(3)
    ]
    assert sorted(p.name for p in (store_path / "runs" / run_one["run_id"]).glob("case_*")) == [
        "case_results.parquet"
    ]
    # Three shard steps, each in a process of its own.
    pids = _step_pids(run_three["run_id"])
    assert set(SHARD_STEPS) <= set(pids)
    assert len({pids[step] for step in SHARD_STEPS}) == 3
    # The plan is launched with the dataset step, not after it.
    order = [(e.step_key, e.event_type_value) for e in _step_events(run_three["run_id"])]
    assert order.index(("evaluate_cases.plan_shards", "STEP_WORKER_STARTING")) < order.index(
        ("eval_dataset", "STEP_SUCCESS")
    )


@pytest.mark.slow
def test_a_shard_whose_adapter_fails_every_case_lets_the_run_finish(
    store_path: Path, tmp_path: Path
):
    # Six cases in three shards of two: the middle shard's cases all make the adapter raise.
    questions = ["good one", "good two", "raise three", "raise four", "good five", "good six"]
    dataset = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": f"c{i}", "question": q} for i, q in enumerate(questions, start=1)],
    )
    done = ragproof(
        "run",
        "--dataset",
        str(dataset),
        "--adapter",
        "tests.support.fault_adapters:FaultyAdapter",
        "--metrics",
        "retrieval.precision_at_k,generation.citation_validity",
        "--shards",
        "3",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "completed"
    run_id = out["run_id"]
    assert _rows(
        store_path, "select cases, case_failures from runs where run_id = ?", [run_id]
    ) == [(6, 2)]
    citation = out["metrics"]["generation.citation_validity"]
    assert (citation["mean"], citation["scored"], citation["errored"]) == (1.0, 4, 2)
    assert _rows(
        store_path,
        "select case_id, reason from case_results where run_id = ? and status = 'error' "
        "and metric = 'generation.citation_validity' order by case_id",
        [run_id],
    ) == [("c3", "ValueError: boom (in answer())"), ("c4", "ValueError: boom (in answer())")]
    assert set(SHARD_STEPS) <= set(_step_pids(run_id))


@pytest.mark.slow
def test_a_crashed_shard_reexecuted_from_failure_alone_repays_no_cached_verdict(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from ragproof_cli.execution import evaluate_job_def
    from tests.faults.conftest import judge_env
    from tests.support.cli import REPO, cli_env
    from tests.support.judge_server import JudgeServer

    # Shard 2 of 3 holds q5 and "crash six"; its process dies on the latter, once, when
    # all 10 requests paid so far (4 + 4 + q5's 2) are cached and on record.
    questions = ["q one?", "q two?", "q three?", "q four?", "q five?", "crash six?"]
    dataset = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": f"c{i}", "question": q} for i, q in enumerate(questions, start=1)],
    )
    marker = tmp_path / "crashed"
    config = tmp_path / "crash.toml"
    # The crashing call waits (up to the adapter's wait_s, 600 s) for the other shards'
    # requests: under the default 60 s per adapter call, a loaded machine timed it out,
    # the case failed instead of the process dying, and the run exited 0 (seen at
    # load 15 to 28; reproduced with timeout_s = 0.5). The call's timeout must outlast
    # the wait.
    config.write_text(
        "[run]\nconcurrency = 3\nshards = 3\ntimeout_s = 900\n\n[adapter]\n"
        'target = "tests.support.fault_adapters:CrashOnceAdapter"\n'
        f'options = {{ marker = "{marker}", wait_cached = 10, wait_recorded = 10 }}\n',
        encoding="utf-8",
    )
    with JudgeServer() as server:
        env = judge_env(server.url)
        first = ragproof(
            "run",
            "--dataset",
            str(dataset),
            "--config",
            str(config),
            "--json",
            env=cli_env(**env),
            # Three shard processes on a loaded machine: minutes, not the usual 3.
            timeout=900,
        )
        # A shard process that dies is not bad input: the command reports an
        # internal failure (exit 3) in one line, and the run can be re-executed.
        assert first.returncode == 3
        assert "ChildProcessCrashException" in first.stderr
        assert marker.exists()
        assert server.request_count == 2 * 5  # q1..q5: answer_relevance, overrefusal

        for name, value in {**env, "PYTHONPATH": str(REPO)}.items():
            monkeypatch.setenv(name, value)
        server.reset()
        with dg.DagsterInstance.get() as instance:
            (failed,) = instance.get_runs()
            assert failed.status == dg.DagsterRunStatus.FAILURE
            result = dg.execute_job(
                dg.reconstructable(evaluate_job_def),
                instance=instance,
                reexecution_options=dg.ReexecutionOptions.from_failure(failed.run_id, instance),
                # As the UI's re-execution does: the new run keeps the parent's partition.
                tags={"dagster/partition": failed.tags["dagster/partition"]},
            )
            assert result.success
            steps = sorted(
                e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"
            )
        # Only the crashed shard and the step that gathers the shards, summarizes the
        # run and evaluates its checks ran again.
        assert steps == [
            "evaluate_cases.evaluate_shard[shard_0002]",
            "evaluate_cases.summarize_run",
        ]
        # q5's verdicts were cached before the crash: only "crash six" asks the judge.
        assert server.request_count == 2

    run_id = failed.tags["dagster/partition"]
    # The record holds what the run paid, every attempt included: shards 0 and 1 paid
    # 4 each, shard 2's crashed attempt 2 (on record in its attempt document before the
    # process died), its re-execution 2 more, hitting the cache for the first 2: the
    # 12 requests the judge server counted over both Dagster runs.
    assert _rows(
        store_path,
        "select status, cases, case_failures, judge_requests, cache_hits from runs "
        "where run_id = ?",
        [run_id],
    ) == [("completed", 6, 0, 12, 2)]
    assert _rows(
        store_path,
        "select count(*) from case_results where run_id = ? and status = 'scored' "
        "and metric = 'generation.answer_relevance'",
        [run_id],
    ) == [(6,)]
