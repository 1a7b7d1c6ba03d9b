"""Shards and object storage: ``ragproof run`` on recorded outputs, no judge,
with 1 and 2 shards on a local store, and with 1 shard on an S3 store (moto's
server on loopback).

Each variant is the real command in a child process with a fresh store and
Dagster home: wall seconds, cases per second and the peak resident memory of
the largest single process: the command or any of its step processes, whose
``VmHWM`` (each process's own peak RSS) is sampled from /proc every 0.2 s
across the command's whole process tree (the step processes are children of
Dagster's forkserver, which ``RUSAGE_CHILDREN`` does not always see).

``python -m benchmarks.shards_store [--cases N] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import (
    RAGPROOF,
    REPO,
    WORK,
    Table,
    clean_env,
    count,
    cpu_count,
    run_measured,
    seconds,
)
from benchmarks._synthetic import RecordedRun, write_recorded_run

sys.path.insert(0, str(REPO))


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _hwm_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreePeak:
    """Samples the peak RSS (VmHWM) of every process below this one while active."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.peaks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            stack = _children(os.getpid())
            while stack:
                pid = stack.pop()
                self.peaks[pid] = max(self.peaks.get(pid, 0), _hwm_bytes(pid))
                stack.extend(_children(pid))

    @property
    def max_bytes(self) -> int:
        return max(self.peaks.values(), default=0)

    @property
    def processes(self) -> int:
        return len(self.peaks)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_once(recorded: RecordedRun, shards: int, store: str, extra_env: dict) -> dict:
    home = Path(tempfile.mkdtemp(prefix="shards-", dir=WORK))
    try:
        location = store if store != "local" else str(home / "store")
        env = clean_env(RAGPROOF_STORE=location, DAGSTER_HOME=str(home / "dagster"), **extra_env)
        cmd = [
            RAGPROOF,
            "run",
            "--dataset",
            str(recorded.dataset),
            "--config",
            str(recorded.config),
            "--shards",
            str(shards),
            "--json",
        ]
        with TreePeak() as peak:
            child = run_measured(cmd, env, REPO, timeout=1800)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if child.returncode != 0:
        raise RuntimeError(f"ragproof run failed ({child.returncode}):\n{child.stderr[-3000:]}")
    summary = json.loads(child.stdout)
    return {
        "wall_s": child.wall_s,
        "cpu_s": child.cpu_s,
        "rss_mb": max(child.max_rss_mib * 2**20, peak.max_bytes) / 1e6,
        "processes": peak.processes,
        "metrics": summary["metrics"],
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2,000 cases")
    parser.add_argument("--no-s3", action="store_true")
    args = parser.parse_args(argv)
    n = 2_000 if args.quick else args.cases
    recorded = write_recorded_run(WORK / f"shards-{n}", n)

    variants: list[tuple[str, int, str, dict]] = [
        ("local", 1, "local", {}),
        ("local", 2, "local", {}),
    ]
    server = None
    if not args.no_s3:
        from tests.support.s3_server import MotoServer

        server = MotoServer().start()
        variants.append(
            ("S3 (moto, loopback)", 1, f"s3://{server.new_bucket()}/store", server.env())
        )
    rows, measured = [], []
    try:
        for label, shards, store, extra in variants:
            m = run_once(recorded, shards, store, extra)
            measured.append(m)
            rows.append(
                [
                    count(n),
                    label,
                    str(shards),
                    seconds(m["wall_s"]),
                    f"{n / m['wall_s']:,.0f}",
                    seconds(m["cpu_s"]),
                    f"{m['rss_mb']:,.0f} MB",
                ]
            )
    finally:
        if server is not None:
            server.stop()
    same = all(m["metrics"] == measured[0]["metrics"] for m in measured)
    speedup = measured[0]["wall_s"] / measured[1]["wall_s"]
    table = Table(
        "Shards and stores: `ragproof run --shards N` on recorded outputs, no judge",
        ["cases", "store", "shards", "wall", "cases/s", "CPU", "peak RSS (largest process)"],
        rows,
        [
            f"Shards 2 vs 1 on the local store: {speedup:.2f}x faster (target 1.7x) on "
            f"{cpu_count()} cores.",
            f"Every variant's summary is identical: {same}.",
            "CPU is user + system of the command and all its step processes.",
        ],
    )
    print(table.markdown())


if __name__ == "__main__":
    main()
