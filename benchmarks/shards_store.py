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
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import (
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    cpu_count,
    publish,
    run_measured,
    seconds,
)
from benchmarks._synthetic import RecordedRun, write_recorded_run

BENCHMARK = Benchmark(
    title="Shards and object storage",
    measures=(
        "`ragproof run --shards N` on recorded outputs, no judge (judge metrics skip, the "
        "refusal heuristic runs): shards 1 and 2 on a local store, and shards 1 on an S3 "
        "store (moto's server on loopback; `--no-s3` leaves it out). Wall, cases/s, CPU "
        "of the whole process tree, peak RSS of the largest processes (each process's "
        "`VmHWM`, sampled every 0.2 s), the 1-minute load before and after each run, and "
        "the seconds per Dagster step from the run's event log. 100,000 cases by default "
        "(`--cases N`; `--quick` is 2,000); the 1,000,000-case figures: `run_all --only "
        "shards_store -- --cases 1000000 --no-s3`."
    ),
    target=(
        "1,000,000 cases: shards 2 >= 1.7x faster than shards 1, "
        "peak RSS per process < 1.5 GB, shards 2 < 150 s"
    ),
    order=40,
)

sys.path.insert(0, str(REPO))


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process so far (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # Fields 14 and 15 (utime, stime) of stat(5), counted after the command name.
    return (int(fields[11]) + int(fields[12])) / _TICKS


_TICKS = os.sysconf("SC_CLK_TCK")


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
        self.cpu: dict[int, float] = {}  # last CPU seconds seen per process
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            stack = _children(os.getpid())
            while stack:
                pid = stack.pop()
                self.peaks[pid] = max(self.peaks.get(pid, 0), _hwm_bytes(pid))
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), _cpu_seconds(pid))
                stack.extend(_children(pid))

    @property
    def max_bytes(self) -> int:
        return max(self.peaks.values(), default=0)

    @property
    def processes(self) -> int:
        return len(self.peaks)

    @property
    def cpu_s(self) -> float:
        """CPU of the whole tree, as last sampled (misses each process's last 0.2 s)."""
        return sum(self.cpu.values())

    def largest(self, n: int) -> list[int]:
        return sorted(self.peaks.values(), reverse=True)[:n]

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


_SPIN = (
    "import time\n"
    "t = time.perf_counter()\n"
    "rows = []\n"
    "for i in range(1_500_000):\n"
    "    rows.append({'a': i, 'b': str(i)})\n"
    "    if len(rows) > 1000:\n"
    "        rows.clear()\n"
    "print(time.perf_counter() - t)\n"
)


def parallel_headroom() -> float:
    """How many cores' worth of Python two processes get right now: the throughput of two
    copies of a small CPU-bound loop run at once, over one copy alone (2.0 on an idle
    2-core machine; the machine is shared, so each figure is reported with this)."""

    def spin(copies: int) -> float:
        procs = [
            subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE, text=True)
            for _ in range(copies)
        ]
        return max(float(p.communicate()[0]) for p in procs)

    alone = min(spin(1) for _ in range(2))
    together = spin(2)
    return 2 * alone / together


def run_once(recorded: RecordedRun, shards: int, store: str, extra_env: dict) -> dict:
    home = Path(tempfile.mkdtemp(prefix="shards-", dir=WORK))
    try:
        location = store if store != "local" else str(home / "store")
        env = clean_env(RAGPROOF_STORE=location, DAGSTER_HOME=str(home / "dagster"), **extra_env)
        cmd = recorded.run_command("--shards", str(shards))
        load_before = os.getloadavg()[0]
        headroom = parallel_headroom()
        with TreePeak() as peak:
            child = run_measured(cmd, env, REPO, timeout=3600)
        load_after = os.getloadavg()[0]
        steps = step_seconds(home / "dagster")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if child.returncode != 0:
        raise RuntimeError(f"ragproof run failed ({child.returncode}):\n{child.stderr[-3000:]}")
    summary = json.loads(child.stdout)
    return {
        "wall_s": child.wall_s,
        "cpu_s": max(child.cpu_s, peak.cpu_s),
        "rss_mb": max(child.max_rss_mib * 2**20, peak.max_bytes) / 1e6,
        "rss_each_mb": [b / 1e6 for b in peak.largest(4)],
        "processes": peak.processes,
        "metrics": summary["metrics"],
        "load": (load_before, load_after),
        "headroom": headroom,
        "steps": steps,
    }


def step_seconds(dagster_home: Path) -> dict[str, float]:
    """Seconds per step of the run, from the Dagster event log (shard steps summed as
    ``evaluate_shard`` total and their longest as ``evaluate_shard (longest)``)."""
    import dagster as dg

    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    try:
        with dg.DagsterInstance.get() as instance:
            runs = instance.get_runs(limit=1)
            stats = instance.get_run_step_stats(runs[0].run_id) if runs else []
    finally:
        if previous is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = previous
    seconds_by: dict[str, float] = {}
    for stat in stats:
        if stat.start_time is None or stat.end_time is None:
            continue
        took = stat.end_time - stat.start_time
        # evaluate_cases.evaluate_shard[shard_0001] -> evaluate_shard.
        key = stat.step_key.split("[")[0].split(".")[-1]
        if key == "evaluate_shard":
            longest = seconds_by.get("evaluate_shard (longest)", 0.0)
            seconds_by["evaluate_shard (longest)"] = max(longest, took)
        seconds_by[key] = seconds_by.get(key, 0.0) + took
    return seconds_by


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2,000 cases")
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--emit", type=Path, help="also write the tables as JSON here (run_all)")
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
                    ", ".join(f"{mb:,.0f}" for mb in m["rss_each_mb"]),
                    f"{m['load'][0]:.1f} / {m['load'][1]:.1f}",
                    f"{m['headroom']:.2f}",
                ]
            )
            print(
                f"{label}, {shards} shard(s): {m['wall_s']:.1f} s; steps: "
                + ", ".join(f"{k} {v:.1f} s" for k, v in m["steps"].items()),
                flush=True,
            )
    finally:
        if server is not None:
            server.stop()
    same = all(m["metrics"] == measured[0]["metrics"] for m in measured)
    speedup = measured[0]["wall_s"] / measured[1]["wall_s"]
    table = Table(
        "Shards and stores: `ragproof run --shards N` on recorded outputs, no judge",
        [
            "cases",
            "store",
            "shards",
            "wall",
            "cases/s",
            "CPU",
            "peak RSS (largest process)",
            "peak RSS of the 4 largest processes (MB)",
            "1-min load before / after",
            "cores free before (2 = idle)",
        ],
        rows,
        [
            f"Shards 2 vs 1 on the local store: {speedup:.2f}x faster (target 1.7x) on "
            f"{cpu_count()} cores.",
            f"Every variant's summary is identical: {same}.",
            "CPU is user + system of the command and all its step processes "
            "(sampled from /proc every 0.2 s).",
            "Cores free: just before each run, two copies of a CPU-bound Python loop at once "
            "did this many times the work of one alone (2.00 on an idle 2-core machine). "
            "The machine is shared; shards can only use what is free.",
        ],
    )
    steps = Table(
        "Where the time went: seconds per Dagster step (from the run's event log)",
        ["store", "shards", *STEP_COLUMNS, "outside the steps"],
        [
            [label, str(shards)]
            + [seconds(m["steps"].get(k, 0.0)) for k in STEP_COLUMNS]
            + [seconds(m["wall_s"] - _critical_path(m["steps"]))]
            for (label, shards, _, _), m in zip(variants, measured, strict=True)
        ],
        [
            "evaluate_shard is the shards' total; the run waits for the longest. "
            "summarize_run gathers the shards, writes the summary and evaluates its checks. "
            "plan_shards runs beside eval_dataset. 'Outside the steps' is the wall time "
            "minus eval_dataset, the longest shard and summarize_run: the command's own "
            "preflight, Dagster's start-up and step launches.",
        ],
    )
    publish([table, steps], args.emit)


STEP_COLUMNS = (
    "eval_dataset",
    "plan_shards",
    "evaluate_shard",
    "evaluate_shard (longest)",
    "summarize_run",
)


def _critical_path(steps: dict[str, float]) -> float:
    # plan_shards needs nothing from eval_dataset: the two run side by side.
    serial = ("eval_dataset", "evaluate_shard (longest)", "summarize_run")
    return sum(steps.get(k, 0.0) for k in serial)


if __name__ == "__main__":
    main()
