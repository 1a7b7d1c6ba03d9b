"""A second run of the same recorded data into one store: the peak memory of every
process of each run (the second run's no_regression check compares it with the
first, case by case), then of ``ragproof compare``, ``ragproof report --against``
and the results browser's compare page data on the two stored runs.

Issue 24 item 5's memory target is under 1.5 GB per process, for a second
1,000,000-case run as for the first. ``--frames`` adds the old way of pairing
(both runs' whole ``case_results`` frames, ``compare_runs``) in a process of its
own, for a before figure: several GB a run at 1,000,000 cases, so only ask for
it on small data.

``python -m benchmarks.second_run [--cases N] [--frames]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import (
    PYTHON,
    RAGPROOF,
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    publish,
    run_measured,
    seconds,
)
from benchmarks._synthetic import write_recorded_run
from benchmarks.shards_store import TreePeak

BENCHMARK = Benchmark(
    title="A second run's memory",
    measures=(
        "A second run of the same recorded data into one store: the peak memory of every "
        "process of each run, then of `ragproof compare`, `ragproof report --against` and "
        "the results browser's compare page data on the two stored runs."
    ),
    target="under 1.5 GB per process",
    order=150,
    in_run_all=False,
)

# What each comparison child runs, on the store's two runs (oldest first).
_COMPARE_PAGE = """
import sys
from ragproof_core.present.app_data import compare_data
from ragproof_core.store import RunStore
data = compare_data(RunStore(), sys.argv[1], sys.argv[2])
print(len(data["comparison"]["metrics"]))
"""

_FRAMES = """
import sys
from ragproof_core.compare import RunSide, compare_runs
from ragproof_core.store import RunStore
store = RunStore()
sides = [RunSide(store.get_run(r), store.case_results_frame(r)) for r in sys.argv[1:3]]
print(len(compare_runs(*sides).metrics))
"""


def _check_evaluation(dagster_home: Path) -> dict[str, str]:
    """The no_regression check's metadata in the home's latest run (its baseline)."""
    import dagster as dg

    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    try:
        with dg.DagsterInstance.get() as instance:
            run = instance.get_runs(limit=1)[0]
            events = instance.all_logs(
                run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
            )
            for event in events:
                evaluation = event.dagster_event.event_specific_data
                if evaluation.check_name == "no_regression":
                    return {k: str(v.value) for k, v in evaluation.metadata.items()} | {
                        "passed": str(evaluation.passed)
                    }
    finally:
        if previous is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = previous
    return {}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--frames", action="store_true", help="also the old frame path")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    n = args.cases
    recorded = write_recorded_run(WORK / f"shards-{n}", n)
    home = Path(tempfile.mkdtemp(prefix="second-run-", dir=WORK))
    rows: list[list[str]] = []
    try:
        env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster"))
        (home / "dagster").mkdir()
        for label in ("first run", "second run (its check compares with the first)"):
            load = os.getloadavg()[0]
            with TreePeak() as peak:
                child = run_measured(
                    recorded.run_command("--shards", str(args.shards)), env, REPO, timeout=7200
                )
            if child.returncode != 0:
                raise RuntimeError(f"ragproof run failed:\n{child.stderr[-3000:]}")
            largest = max(child.max_rss_mib * 2**20, peak.max_bytes) / 1e6
            rows.append(
                [
                    f"`ragproof run --shards {args.shards}`: {label}",
                    seconds(child.wall_s),
                    f"{largest:,.0f} MB",
                    ", ".join(f"{mb:,.0f}" for mb in (b / 1e6 for b in peak.largest(4))),
                    f"{load:.1f}",
                ]
            )
            print(rows[-1], flush=True)
        check = _check_evaluation(home / "dagster")
        first, second = _run_ids(env)
        store_env = {**env, "PYTHONPATH": str(REPO)}
        children = [
            ("`ragproof compare A B --json`", [RAGPROOF, "compare", first, second, "--json"]),
            (
                "`ragproof report B --against A`",
                [RAGPROOF, "report", second, "--against", first, "--out", str(home / "r.html")],
            ),
            ("the compare page's data (`app_data.compare_data`)",
             [PYTHON, "-c", _COMPARE_PAGE, first, second]),
        ]  # fmt: skip
        if args.frames:
            children.append(
                (
                    "before: both whole frames (`compare_runs`)",
                    [PYTHON, "-c", _FRAMES, first, second],
                )
            )
        for label, cmd in children:
            load = os.getloadavg()[0]
            child = run_measured(cmd, store_env, REPO, timeout=7200)
            if child.returncode != 0:
                raise RuntimeError(f"{label} failed:\n{child.stderr[-3000:]}")
            rows.append(
                [label, seconds(child.wall_s), f"{child.max_rss_mib * 2**20 / 1e6:,.0f} MB", "",
                 f"{load:.1f}"]
            )  # fmt: skip
            print(rows[-1], flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    table = Table(
        f"A second run of the same {count(n)} recorded cases into one store, no judge",
        ["process", "wall", "peak RSS (largest process)", "4 largest (MB)", "1-min load"],
        rows,
        [
            "Peak RSS is each process's own VmHWM; a run's row is the largest of the command "
            "and its step processes (sampled from /proc every 0.2 s). Target: under 1.5 GB "
            "per process.",
            "The second run's no_regression check: baseline "
            f"{check.get('baseline', '(not found)')}, regressed {check.get('regressed', '?')}, "
            f"passed {check.get('passed', '?')}.",
            "Both runs score the same recording, so every paired delta is 0 and the paired "
            "statistics return at once: the figures are the pairing's.",
        ],
    )
    publish([table], args.emit)


def _run_ids(env: dict[str, str]) -> tuple[str, str]:
    """The store's two runs, oldest first."""
    listing = run_measured([RAGPROOF, "runs", "--json"], env, REPO, timeout=600)
    first, second = sorted(json.loads(listing.stdout), key=lambda r: r["started_at"])
    return first["run_id"], second["run_id"]


if __name__ == "__main__":
    main()
