"""Input work of a recorded run, done once: what the dataset step pays to read and
validate the dataset and the recording and store the recording as the run's
``recorded_outputs`` table (store/recording.py), beside what the line-by-line
validator alone costs (what the command's own preflight paid before the run
existed, and each shard again by replaying JSON lines).

In one process: the dataset (``load_dataset``), the recording by the fast path
(pyarrow's JSON reader) and by the exact path (the adapter's validator), each
with its peak RSS. With ``--run-shards N``, also the real ``ragproof run
--shards N`` on the same files (benchmarks/shards_store.py's measurement): wall,
seconds per Dagster step, the largest processes' peak RSS and the load.

``python -m benchmarks.ingest_recording [--cases N] [--run-shards N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import WORK, Table, count, publish, seconds
from benchmarks._synthetic import write_recorded_run
from ragproof_core.data.dataset import load_dataset
from ragproof_core.store import RunStore
from ragproof_core.store.recording import staged_recording


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _in_process(dataset: Path, outputs: Path) -> list[list[str]]:
    rows = []
    load = os.getloadavg()[0]
    started = time.perf_counter()
    cases = load_dataset(dataset)
    rows.append(["dataset: load_dataset", seconds(time.perf_counter() - started), load])
    store = RunStore(tempfile.mkdtemp(prefix="ingest-", dir=WORK))
    store.write_manifest("bench", {})
    for fast in (True, False):
        load = os.getloadavg()[0]
        started = time.perf_counter()
        with staged_recording(str(outputs), "bench", fast=fast) as staged:
            staged_s = time.perf_counter() - started
            store.write_recorded_outputs("bench", staged, cases)
            path = "fast (pyarrow JSON reader)" if staged.fast else "exact (line validator)"
        total = time.perf_counter() - started
        rows.append(
            [
                f"recording: {path}, stored",
                f"{seconds(total)} ({seconds(staged_s)} reading and validating)",
                load,
            ]
        )
    return [[what, took, f"{load:.1f}"] for what, took, load in rows]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--run-shards", type=int, help="also time `ragproof run --shards N`")
    parser.add_argument("--run-only", action="store_true", help="only the command")
    args = parser.parse_args(argv)
    recorded = write_recorded_run(WORK / f"shards-{args.cases}", args.cases)
    tables = []
    if not args.run_only:
        tables.append(
            Table(
                f"Input work of a recorded run, {count(args.cases)} cases "
                f"({recorded.megabytes:,.0f} MB of dataset and recording), one process",
                ["step", "seconds", "load (1 min)"],
                _in_process(recorded.dataset, recorded.outputs),
                [f"peak RSS of the process after all three: {_peak_mb():,.0f} MB"],
            )
        )
    if args.run_shards:
        from benchmarks.shards_store import run_once

        m = run_once(recorded, args.run_shards, "local", {})
        tables.append(
            Table(
                f"`ragproof run --shards {args.run_shards}`, {count(args.cases)} recorded cases",
                ["wall", "steps (s)", "largest processes' peak RSS (MB)", "load before / after"],
                [
                    [
                        seconds(m["wall_s"]),
                        ", ".join(f"{k} {v:.1f}" for k, v in m["steps"].items()),
                        ", ".join(f"{mb:,.0f}" for mb in m["rss_each_mb"]),
                        f"{m['load'][0]:.1f} / {m['load'][1]:.1f}",
                    ]
                ],
            )
        )
    publish(tables, None)


if __name__ == "__main__":
    main()
