"""Dagster's own overhead in `ragproof run --shards 2` (issue 24, item 5).

Runs the four-metric command of ``run_floor`` on the same recorded cases
(``_synthetic.write_recorded_run``) with a fresh store and Dagster home, then
reads the run's events back from that home and splits the command's wall time:

- before the run: the command's start to the run's first event (start-up,
  validation, the instance, the run's creation);
- each step: the hand-off (the step before it done, or the run started, until
  this step's process is asked for), the launch (``STEP_WORKER_STARTING`` to
  ``STEP_WORKER_STARTED``: a process forked from the forkserver), the set-up
  (to ``STEP_START``: the instance, the plan, the resources) and the work
  (``STEP_START`` to ``STEP_SUCCESS``);
- after the run: the run's success to the command's exit (printing the results);
- after the dataset step: ``eval_dataset``'s success to the command's exit (the
  shards, the summary step and the printing; the shard plan runs beside the dataset
  step), and the CPU seconds
  of every process of the command (the step processes are the forkserver's
  children: this process adopts them as a subreaper and counts them as they end).

The machine is shared: the 1-minute load is printed beside the figures.

``python -m benchmarks.launch_timeline [--cases N] [--quick]``
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from benchmarks._common import (
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    measure_json_command,
    publish,
    seconds,
)
from benchmarks._synthetic import write_recorded_run
from benchmarks.run_floor import FOUR

BENCHMARK = Benchmark(
    title="Where a run's time goes (launch timeline)",
    measures=(
        "Dagster's own overhead in `ragproof run --shards 2` on 100,000 recorded cases "
        "(the four retrieval metrics of `run_floor.py`, fresh store and Dagster home): "
        "the seconds before the run's first event, and per step the hand-off from the "
        "step before, the process launch (`STEP_WORKER_STARTING` to "
        "`STEP_WORKER_STARTED`), the set-up (to `STEP_START`) and the work, read from the "
        "run's event log."
    ),
    target="the whole run <= 2x the floor (with `run_floor.py`)",
    order=120,
    in_run_all=False,
)


@dataclass
class StepTimes:
    """Seconds from the command's start at which a step went through each stage."""

    step: str
    asked: float
    started: float | None = None
    set_up: float | None = None
    done: float | None = None


# prctl(2): orphaned descendants (the forkserver, outliving the command) come to this process.
_PR_SET_CHILD_SUBREAPER = 36


def adopt_descendants() -> None:
    """Make this process the reaper of every orphaned descendant (Linux)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_descendants() -> None:
    """Wait for every descendant still running, so their CPU counts in RUSAGE_CHILDREN."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_events(dagster_home: Path) -> list[dg.EventLogEntry]:
    """Every event of the one run in ``dagster_home``."""
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs()
        return [r.event_log_entry for r in instance.get_records_for_run(run.run_id).records]


def step_times(events: list[dg.EventLogEntry], origin: float) -> list[StepTimes]:
    """Each step's stages, in the order the steps were asked for."""
    steps: dict[str, StepTimes] = {}
    for entry in events:
        event = entry.dagster_event
        if event is None or entry.step_key is None:
            continue
        at = entry.timestamp - origin
        kind = event.event_type_value
        if kind == "STEP_WORKER_STARTING":
            steps[entry.step_key] = StepTimes(entry.step_key, asked=at)
        elif entry.step_key in steps:
            times = steps[entry.step_key]
            if kind == "STEP_WORKER_STARTED":
                times.started = at
            elif kind == "STEP_START":
                times.set_up = at
            elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
                times.done = at
    return list(steps.values())


def event_time(events: list[dg.EventLogEntry], kind: str, origin: float) -> float:
    return next(
        e.timestamp - origin
        for e in events
        if e.dagster_event is not None and e.dagster_event.event_type_value == kind
    )


def hand_off(times: StepTimes, steps: list[StepTimes], run_start: float) -> float:
    """From the last step done before this one was asked for (or the run's start)."""
    before = [t.done for t in steps if t.done is not None and t.done <= times.asked]
    return times.asked - max(before, default=run_start)


def _span(start: float | None, end: float | None) -> str:
    return "-" if start is None or end is None else seconds(end - start)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2,000 cases")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    n = 2_000 if args.quick else args.cases
    recorded = write_recorded_run(WORK / f"shards-{n}", n)
    home = Path(tempfile.mkdtemp(prefix="launch-timeline-", dir=WORK))
    try:
        env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster"))
        adopt_descendants()
        cpu_before = children_cpu()
        origin = time.time()
        measured = measure_json_command(
            recorded.run_command("--shards", "2", "--metrics", ",".join(FOUR)), env, REPO
        )
        reap_descendants()
        every_cpu = children_cpu() - cpu_before
        events = run_events(home / "dagster")
    finally:
        shutil.rmtree(home, ignore_errors=True)

    first = event_time(events, "PIPELINE_START", origin)
    last = event_time(events, "PIPELINE_SUCCESS", origin)
    steps = step_times(events, origin)
    rows = [["before the run (start-up, validation, instance, run creation)", "-", "-", "-",
             seconds(first), seconds(first)]]  # fmt: skip
    for times in steps:
        rows.append(
            [f"`{times.step}`", seconds(hand_off(times, steps, first)),
             _span(times.asked, times.started), _span(times.started, times.set_up),
             _span(times.set_up, times.done), seconds(times.done or times.asked)]
        )  # fmt: skip
    rows.append(["after the run (the results printed)", "-", "-", "-",
                 seconds(measured["wall_s"] - last), seconds(measured["wall_s"])])  # fmt: skip
    dataset_done = next(t.done for t in steps if t.step == "eval_dataset")
    launches = [t.started - t.asked for t in steps if t.started is not None]
    set_ups = [t.set_up - t.started for t in steps if t.set_up is not None and t.started]
    table = Table(
        f"Where a `ragproof run --shards 2` of {count(n)} recorded cases spends its time "
        "(four retrieval metrics)",
        ["stage", "hand-off", "launch", "set-up", "work", "ends at"],
        rows,
        [
            f"Command: {seconds(measured['wall_s'])} wall, {seconds(measured['cpu_s'])} CPU "
            f"in its own process, {seconds(every_cpu)} CPU in all its processes (the "
            "forkserver and the steps too), 1-minute load "
            f"{measured['load']:.2f} before it.",
            "After the dataset step (`eval_dataset`'s success to the command's exit): "
            f"{seconds(measured['wall_s'] - dataset_done)}.",
            f"Step launches: {len(launches)}, {seconds(sum(launches))} in all "
            f"(longest {seconds(max(launches))}); set-ups {seconds(sum(set_ups))} in all.",
            "Seconds are from the command's start (the measuring wrapper's start-up "
            "included in 'before the run'); steps side by side overlap.",
        ],
    )
    publish([table], args.emit)


if __name__ == "__main__":
    sys.exit(main())
