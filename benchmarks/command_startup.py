"""A `ragproof` command's own start-up (issue 24, item 5): what passes before a run's
first step, and before any other command does its work.

Per checkout (this one, and with ``--against PATH`` an older one measured in turn
with it, so both see the same load), each figure the median of ``--repeat``
fresh processes:

- ``ragproof --help`` and ``ragproof runs --json`` on an empty store: wall and the
  command's own CPU (start-up is all they do);
- ``ragproof run --shards 2`` on 2,000 recorded cases (four retrieval metrics), in a
  fresh Dagster home and again in that home once it holds a run: seconds from the
  command's start to the run's start (``PIPELINE_START``: the imports, the validation,
  the instance, the run's creation) and to its first step's start (``STEP_START``
  of ``eval_dataset``, in a process forked from the forkserver).

The machine is shared: the 1-minute load is printed beside the figures.

``python -m benchmarks.command_startup [--against PATH] [--repeat N] [--quick]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from benchmarks._common import RAGPROOF, REPO, WORK, Benchmark, Table, clean_env, publish, seconds
from benchmarks._synthetic import write_recorded_run
from benchmarks.launch_timeline import event_time, step_times
from benchmarks.run_floor import FOUR

BENCHMARK = Benchmark(
    title="A command's own start-up",
    measures=(
        "`ragproof --help`, `ragproof runs --json` and `ragproof run --shards 2` on 2,000 "
        "recorded cases in a fresh and a warm Dagster home (seconds to the run's start "
        "and its first step's start, from the run's events), wall and the command's CPU, "
        "median of `--repeat`; `--against PATH` measures an older checkout in turn with "
        "this one."
    ),
    target="under 2 s before a `--shards 2` run's first step, idle",
    order=130,
    in_run_all=False,
)

CASES = 2_000


@dataclass(frozen=True)
class Started:
    wall_s: float
    cpu_s: float  # the command's own process: the forkserver is not its waited-for child
    run_start_s: float | None = None
    first_step_s: float | None = None


def started(tree: Path, args: Sequence[str], env: dict[str, str], cwd: Path) -> Started:
    """Run ``ragproof ARGS`` with ``tree`` first on the path and as the working folder
    (the command puts that on its path, its forkserver's too); its wall and CPU time."""
    env = {**env, "PYTHONPATH": str(tree)}
    origin = time.perf_counter()
    proc = subprocess.Popen(
        [RAGPROOF, *args], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - origin
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(
            f"ragproof {list(args[:3])} from {tree} failed:\n{proc.stderr.read().decode()}"
        )
    proc.stderr.close()
    return Started(wall, usage.ru_utime + usage.ru_stime)


def latest_run_events(dagster_home: Path) -> list[dg.EventLogEntry]:
    """Every event of the newest run in ``dagster_home``."""
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    with dg.DagsterInstance.get() as instance:
        run = instance.get_runs(limit=1)[0]
        return [r.event_log_entry for r in instance.get_records_for_run(run.run_id).records]


def run_started(tree: Path, run_args: Sequence[str], home: Path) -> Started:
    """One `ragproof run` in ``home``; when its run and its first step started."""
    env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster"))
    origin = time.time()
    done = started(tree, run_args, env, tree)
    events = latest_run_events(home / "dagster")
    first_step = min(t.set_up for t in step_times(events, origin) if t.set_up is not None)
    return Started(
        done.wall_s, done.cpu_s, event_time(events, "PIPELINE_START", origin), first_step
    )


def _median(values: list[float]) -> str:
    return seconds(statistics.median(values))


def measure(trees: dict[str, Path], run_args: Sequence[str], repeat: int) -> dict:
    """Each figure of each tree, the trees taking turns so that they share the load."""
    figures = {name: {"help": [], "runs": [], "fresh": [], "warm": []} for name in trees}
    loads = {name: [] for name in trees}
    for _ in range(repeat):
        for name, tree in trees.items():
            loads[name].append(os.getloadavg()[0])
            home = Path(tempfile.mkdtemp(prefix="command-startup-", dir=WORK))
            try:
                env = clean_env(
                    RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster")
                )
                mine = figures[name]
                mine["help"].append(started(tree, ["--help"], env, tree))
                mine["runs"].append(started(tree, ["runs", "--json"], env, tree))
                mine["fresh"].append(run_started(tree, run_args, home))
                mine["warm"].append(run_started(tree, run_args, home))
            finally:
                shutil.rmtree(home, ignore_errors=True)
    return {name: (figures[name], statistics.mean(loads[name])) for name in trees}


def rows(name: str, figures: dict[str, list[Started]], load: float) -> list[list[str]]:
    def col(key: str, attr: str) -> str:
        return _median([getattr(s, attr) for s in figures[key]])

    return [
        [name, "`ragproof --help`", col("help", "wall_s"), col("help", "cpu_s"), "-", "-",
         f"{load:.2f}"],
        [name, "`ragproof runs --json` (empty store)", col("runs", "wall_s"),
         col("runs", "cpu_s"), "-", "-", f"{load:.2f}"],
        [name, "`ragproof run --shards 2`, fresh Dagster home", col("fresh", "wall_s"),
         col("fresh", "cpu_s"), col("fresh", "run_start_s"), col("fresh", "first_step_s"),
         f"{load:.2f}"],
        [name, "the same, the home holding a run", col("warm", "wall_s"), col("warm", "cpu_s"),
         col("warm", "run_start_s"), col("warm", "first_step_s"), f"{load:.2f}"],
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="an older checkout, measured in turn")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one of each")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    recorded = write_recorded_run(WORK / f"shards-{CASES}", CASES)
    run_args = [*recorded.run_command("--shards", "2", "--metrics", ",".join(FOUR))[1:]]
    trees = {"this checkout": REPO}
    if args.against:
        trees = {f"`{args.against}`": args.against.resolve(), **trees}
    table_rows: list[list[str]] = []
    for name, (figures, load) in measure(trees, run_args, repeat).items():
        table_rows += rows(name, figures, load)
    publish(
        [
            Table(
                f"A command's start-up (median of {repeat}; `run` on {CASES:,} recorded cases)",
                [
                    "checkout",
                    "command",
                    "wall",
                    "CPU",
                    "to the run's start",
                    "to the first step's start",
                    "load",
                ],
                table_rows,
                [
                    "CPU is the command's own process (not its forkserver or steps); "
                    "load: the 1-minute load before each checkout's turns, averaged.",
                    "Seconds to the run's and first step's start are from the command's "
                    "start, read from the run's Dagster events.",
                ],
            )
        ],
        args.emit,
    )


if __name__ == "__main__":
    sys.exit(main())
