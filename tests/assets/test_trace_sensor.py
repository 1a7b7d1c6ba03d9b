"""trace_sensor (CONTRACT section 18) on a real DagsterInstance through its evaluation
function: one run request per new trace file, none on a second tick, across restarts
(the cursor handed to a fresh context), on a local folder and on moto's S3 server on
loopback; and one requested run executed for real."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from ragproof_assets.definitions import defs
from ragproof_assets.traces.sensor import TRACE_FILE_TAG, trace_sensor
from ragproof_core.config import ConfigError
from ragproof_core.store.run_store import RunStore
from tests.support.otlp import document, root_span, trace_id, write_traces

METRICS = ["system.latency_s", "generation.citation_validity"]


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def traces_env(tmp_path, monkeypatch):
    config = tmp_path / "ragproof.toml"
    # The seed read from the environment as the evaluation starts (CONTRACT section 28).
    config.write_text(
        f'[traces]\nsample = 1.0\nseed = "${{TRACE_SEED}}"\nmetrics = {json.dumps(METRICS)}\n'
    )
    monkeypatch.setenv("TRACE_SEED", "3")
    monkeypatch.setenv("RAGPROOF_TRACES_CONFIG", str(config))
    monkeypatch.setenv("RAGPROOF_TRACES_WORKDIR", str(tmp_path / "work"))
    return tmp_path


def _spans(first: int, count: int) -> list[dict]:
    return [
        root_span(trace_id(n), f"question {n}?", f"answer {n}", duration_ms=100 * n)
        for n in range(first, first + count)
    ]


def _tick(instance, cursor: str | None):
    """One sensor evaluation on a fresh context, as after a restart: only the cursor and
    the instance carry over."""
    with dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs) as context:
        return trace_sensor(context)


def test_one_run_per_new_local_file_and_none_on_the_next_tick(
    instance, traces_env, monkeypatch, store_path
):
    folder = traces_env / "traces"
    (folder / "2026-01-01").mkdir(parents=True)
    monkeypatch.setenv("RAGPROOF_TRACES", str(folder))
    first = write_traces(folder / "2026-01-01" / "a.jsonl", _spans(1, 3))
    second = write_traces(folder / "b.jsonl", _spans(10, 2))
    (folder / "notes.txt").write_text("not a trace file")

    result = _tick(instance, None)
    assert isinstance(result, dg.SensorResult)
    assert sorted(r.tags[TRACE_FILE_TAG] for r in result.run_requests) == [
        str(first),
        str(second),
    ]
    assert sorted(r.run_key for r in result.run_requests) == [f"traces:{first}", f"traces:{second}"]
    (partitions,) = result.dynamic_partitions_requests
    assert sorted(partitions.partition_keys) == sorted(r.partition_key for r in result.run_requests)
    assert json.loads(result.cursor) == sorted([str(first), str(second)])

    again = _tick(instance, result.cursor)
    assert isinstance(again, dg.SkipReason)

    third = write_traces(folder / "c.jsonl", _spans(20, 1))
    later = _tick(instance, result.cursor)
    assert [r.tags[TRACE_FILE_TAG] for r in later.run_requests] == [str(third)]
    assert isinstance(_tick(instance, later.cursor), dg.SkipReason)

    # The requested run evaluates that file's traces with [traces] metrics.
    (request,) = later.run_requests
    instance.add_dynamic_partitions("evaluation_runs", [request.partition_key])
    run = defs.resolve_job_def("evaluate").execute_in_process(
        run_config=request.run_config,
        instance=instance,
        partition_key=request.partition_key,
        tags=request.tags,
    )
    assert run.success
    store = RunStore(store_path)
    summaries = {s["metric"]: s for s in store.summaries(request.partition_key)}
    assert set(summaries) == set(METRICS)
    latency = summaries["system.latency_s"]
    assert (latency["scored"], latency["mean"]) == (1, 2.0)  # trace 20: a 2,000 ms root span
    assert summaries["generation.citation_validity"]["skipped"] == 1


def test_a_bad_file_is_logged_and_not_retried(instance, traces_env, monkeypatch):
    folder = traces_env / "traces"
    folder.mkdir()
    monkeypatch.setenv("RAGPROOF_TRACES", str(folder))
    bad = folder / "bad.jsonl"
    bad.write_text(json.dumps(document([{"spanId": "ab", "name": "x"}])) + "\n")
    good = write_traces(folder / "good.jsonl", _spans(1, 1))
    result = _tick(instance, None)
    assert [r.tags[TRACE_FILE_TAG] for r in result.run_requests] == [str(good)]
    assert json.loads(result.cursor) == [str(bad), str(good)]
    assert isinstance(_tick(instance, result.cursor), dg.SkipReason)


def test_an_unset_variable_in_traces_stops_the_tick_naming_it(instance, traces_env, monkeypatch):
    folder = traces_env / "traces"
    folder.mkdir()
    monkeypatch.setenv("RAGPROOF_TRACES", str(folder))
    write_traces(folder / "a.jsonl", _spans(1, 1))
    monkeypatch.delenv("TRACE_SEED")
    with pytest.raises(ConfigError, match=r"traces\.seed: environment variable TRACE_SEED is not"):
        _tick(instance, None)


def test_no_location_is_a_skip(instance, monkeypatch):
    monkeypatch.delenv("RAGPROOF_TRACES", raising=False)
    skipped = _tick(instance, None)
    assert isinstance(skipped, dg.SkipReason) and "RAGPROOF_TRACES" in skipped.skip_message


def test_the_sensor_is_stopped_by_default():
    assert trace_sensor.default_status == dg.DefaultSensorStatus.STOPPED


def test_one_run_per_new_file_on_s3(instance, traces_env, monkeypatch, s3_server, tmp_path):
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    bucket = s3_server.new_bucket()
    client = s3_server.client()
    local = [write_traces(tmp_path / f"{n}.jsonl", _spans(n * 10, 2)) for n in (1, 2)]
    for path in local:
        client.upload_file(str(path), bucket, f"traces/{path.name}")
    monkeypatch.setenv("RAGPROOF_TRACES", f"s3://{bucket}/traces")

    result = _tick(instance, None)
    files = [f"s3://{bucket}/traces/1.jsonl", f"s3://{bucket}/traces/2.jsonl"]
    assert sorted(r.tags[TRACE_FILE_TAG] for r in result.run_requests) == files
    assert isinstance(_tick(instance, result.cursor), dg.SkipReason)
    # Each run reads its own file's traces, imported under the work folder.
    datasets = sorted(
        r.run_config["ops"]["eval_dataset"]["config"]["dataset"] for r in result.run_requests
    )
    questions = [
        [json.loads(line)["question"] for line in Path(path).read_text().splitlines()]
        for path in datasets
    ]
    assert sorted(questions) == [["question 10?", "question 11?"], ["question 20?", "question 21?"]]

    third = write_traces(tmp_path / "3.jsonl", _spans(30, 1))
    client.upload_file(str(third), bucket, "traces/3.jsonl")
    later = _tick(instance, result.cursor)
    assert [r.tags[TRACE_FILE_TAG] for r in later.run_requests] == [f"s3://{bucket}/traces/3.jsonl"]
