"""``trace_sensor``: one evaluation run per new OTLP/JSON trace file (CONTRACT section 18).

It watches ``RAGPROOF_TRACES`` (a folder or an fsspec URL such as ``s3://bucket/traces``)
and, for each file it has not seen, imports that file alone (sampled with the
``[traces]`` table of ``RAGPROOF_TRACES_CONFIG``, a ragproof.toml) into
``RAGPROOF_TRACES_WORKDIR`` (default ``data/traces``) and requests one run of the
`evaluate` job over its cases, replayed by ``RecordedAdapter``, scoring
``[traces] metrics`` (by default the reference-free ones). The same config file
gives the run its other settings ([run], [judge], [[metric]]).

The cursor is the sorted list of files already handled, so a restarted sensor (or
daemon) evaluates each file once; each request's run key is the file too, so even a
cursor lost with its instance never runs a file twice there. A file whose import
fails (bad input) is logged, counted as handled and not retried: fix it and write it
under a new name. Point the sensor at closed files (the Collector's file exporter with
rotation), not at one still being written.

Stopped by default: start it in the UI (Automation -> trace_sensor) or with
``dagster sensor start trace_sensor -w workspace.yaml``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg

from ragproof_assets.evaluation.config import EvalRunConfig, evaluate_run_config
from ragproof_assets.evaluation.jobs import evaluate_job
from ragproof_assets.evaluation.partitions import evaluation_runs
from ragproof_assets.evaluation.run_tags import RUN_ID_TAG, SOURCE_TAG
from ragproof_core.config import expanded, load_config
from ragproof_core.data.dataset import DatasetError
from ragproof_core.run.trace_feed import import_trace_file, list_trace_files
from ragproof_core.store import new_run_id

TRACES_ENV = "RAGPROOF_TRACES"
CONFIG_ENV = "RAGPROOF_TRACES_CONFIG"
WORKDIR_ENV = "RAGPROOF_TRACES_WORKDIR"
DEFAULT_WORKDIR = Path("data/traces")
RECORDED_ADAPTER = "ragproof_core.adapters.recorded:RecordedAdapter"
TRACE_FILE_TAG = "ragproof/trace_file"


def seen_files(cursor: str | None) -> set[str]:
    return set(json.loads(cursor)) if cursor else set()


@dg.sensor(
    job=evaluate_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="For each new OTLP/JSON file under $RAGPROOF_TRACES, evaluate its sampled "
    "traces ([traces] of $RAGPROOF_TRACES_CONFIG) as one new run.",
)
def trace_sensor(context: dg.SensorEvaluationContext):
    location = os.environ.get(TRACES_ENV)
    if not location:
        return dg.SkipReason(f"{TRACES_ENV} is not set")
    config_file = os.environ.get(CONFIG_ENV) or None
    # [traces] as this evaluation uses it: ${NAME} read as it starts (CONTRACT section 28).
    traces = expanded(load_config(config_file)).config.traces
    workdir = Path(os.environ.get(WORKDIR_ENV) or DEFAULT_WORKDIR)
    seen = seen_files(context.cursor)
    new = [source for source in list_trace_files(location) if source not in seen]
    if not new:
        return dg.SkipReason(f"no new trace file under {location}")
    requests, run_ids = [], []
    for source in new:
        seen.add(source)
        try:
            imported = import_trace_file(source, workdir, traces)
        except DatasetError as exc:
            context.log.error(f"trace file not evaluated: {exc}")
            continue
        for note in imported.notes:
            context.log.info(f"{source}: {note}")
        if not imported.cases:
            context.log.info(f"{source}: no sampled trace to evaluate")
            continue
        run_id = new_run_id()
        form = EvalRunConfig(
            dataset=str(imported.cases_path),
            config_file=config_file,
            adapter=RECORDED_ADAPTER,
            adapter_options_json=json.dumps({"path": str(imported.outputs_path)}),
            metrics=list(traces.metrics),
        )
        requests.append(
            dg.RunRequest(
                run_key=f"traces:{source}",
                partition_key=run_id,
                run_config=evaluate_run_config(form),
                tags={SOURCE_TAG: "traces", RUN_ID_TAG: run_id, TRACE_FILE_TAG: source},
            )
        )
        run_ids.append(run_id)
    return dg.SensorResult(
        run_requests=requests,
        cursor=json.dumps(sorted(seen)),
        dynamic_partitions_requests=[evaluation_runs.build_add_request(run_ids)]
        if run_ids
        else None,
    )
