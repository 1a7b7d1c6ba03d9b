"""Subprocess side of the store's multi-process tests.

Usage: python worker.py COMMAND ROOT [ARGS...]; it prints one line per
milestone (flushed) so the test can act at exact moments, and waits for a
line on stdin where the test needs to hold it in place.

- write-run ROOT RUN_ID N_CASES GO_FILE: print "waiting", spin until GO_FILE
  exists, then ensure_views and write a full run of N_CASES cases; "done".
- hold ROOT ro|rw: open ragproof.duckdb read-only or read-write, print
  "holding", keep it open until stdin gives a line.
- mid-write ROOT RUN_ID N_ROWS: start a run and begin its case_results file;
  after the first row group print "mid <temp path>" and wait for stdin; then
  finish the file and the run and print "done".
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.model import CaseOutput
from ragproof_core.store import files, schema, views
from ragproof_core.store.run_store import RunStore
from tests.core.store import sample


def say(line: str) -> None:
    print(line, flush=True)


def write_run(root: str, run_id: str, n_cases: str, go_file: str) -> None:
    store = RunStore(root)
    say("waiting")
    while not Path(go_file).exists():
        time.sleep(0.001)
    store.ensure_views()
    case_ids = [f"{run_id}-case-{i}" for i in range(int(n_cases))]
    store.write_manifest(run_id, {"run_id": run_id})
    store.write_outputs(run_id, [CaseOutput(c, None, None, "boom") for c in case_ids])
    store.write_case_results(run_id, sample.results_for(case_ids))
    store.write_summaries(run_id, sample.SUMMARIES)
    store.write_run(sample.record(run_id, cases=len(case_ids)))
    store.ensure_views()
    say("done")


def hold(root: str, mode: str) -> None:
    store = RunStore(root)
    con = views.open_db(store.layout, read_only=mode == "ro")
    con.execute("SELECT 1").fetchall()
    say("holding")
    sys.stdin.readline()
    con.close()


def mid_write(root: str, run_id: str, n_rows: str) -> None:
    store = RunStore(root)
    store.write_manifest(run_id, {"run_id": run_id})
    store.write_dataset(run_id, sample.CASES)
    results = sample.results_for([f"case-{i}" for i in range(int(n_rows) // len(METRIC_NAMES))])
    table = schema.encode_case_results(run_id, results)
    half = table.num_rows // 2
    target = store.layout.table_path(run_id, "case_results")
    # The writer closes (footer written) before atomic_path renames the file.
    with files.atomic_path(target) as tmp, pq.ParquetWriter(tmp, table.schema) as writer:
        writer.write_table(table.slice(0, half))
        say(f"mid {tmp}")
        sys.stdin.readline()
        writer.write_table(table.slice(half))
    store.write_summaries(run_id, sample.SUMMARIES)
    store.write_run(sample.record(run_id, cases=table.num_rows // len(METRIC_NAMES)))
    say("done")


COMMANDS = {"write-run": write_run, "hold": hold, "mid-write": mid_write}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
