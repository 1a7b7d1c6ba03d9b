"""The Dagster instance's classes and what a run pays for them (issues 24 and 44).

The four-metric ``ragproof run --shards 2`` of ``run_floor`` on the same recorded
cases (``_synthetic.write_recorded_run``), in a fresh store and Dagster home and then
again on that home, alternating the home's ``dagster.yaml``:

- Dagster's own classes throughout: the ``LocalComputeLogManager`` (a ``tail -F`` and a
  watcher process per stream of every step) and its SQLite storages with the
  consolidated event log;
- ragproof's compute log manager with those storages (what ``ragproof_cli/instance.py``
  writes into a new home);
- ragproof's compute log manager with ``storage: sqlite`` (a database a run: what a home
  an earlier ragproof set up is given);
- with ``--before PATH``, an earlier checkout of ragproof at PATH on a home it sets up
  itself (before 2026-12-07: ragproof's own SQLite storage classes, since removed).

The machine is shared: the 1-minute load is beside each figure, and the variants are
compared by their medians over rounds run side by side.

``python -m benchmarks.instance_classes [--cases N] [--rounds N] [--before PATH] [--quick]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from benchmarks._common import (
    REPO,
    WORK,
    Benchmark,
    Table,
    check_checkout,
    clean_env,
    count,
    measure_json_command,
    publish,
)
from benchmarks._synthetic import write_recorded_run
from benchmarks.run_floor import FOUR
from ragproof_cli.instance import dagster_yaml, run_database_dagster_yaml

BENCHMARK = Benchmark(
    title="The Dagster instance's classes",
    measures=(
        "The four-metric `ragproof run --shards 2` of `run_floor.py` on 100,000 recorded "
        "cases, in a fresh store and Dagster home and again on that home, alternating the "
        "dagster.yaml variants: Dagster's own classes throughout, ragproof's compute log "
        "manager with Dagster's storages (consolidated event log, or a database a run), and "
        "with `--before PATH` an earlier checkout; every round's wall and the medians, the "
        "1-minute load beside."
    ),
    target="the whole run <= 2x the floor (with `run_floor.py`)",
    order=110,
    in_run_all=False,
)

LOCAL_COMPUTE_LOGS = """compute_logs:
  module: dagster._core.storage.local_compute_log_manager
  class: LocalComputeLogManager
  config:
    base_dir: {home}/storage
"""
STOCK = "Dagster's compute logs and storages (consolidated event log)"
OURS = "ragproof's compute logs, Dagster's storages (consolidated event log)"
RUN_DATABASES = "ragproof's compute logs, Dagster's storage: sqlite (a database a run)"
BEFORE = "an earlier ragproof (--before), its own dagster.yaml"


def _dagster_yaml(variant: str, home: Path) -> str | None:
    """The variant's dagster.yaml; None: the earlier ragproof writes its own."""
    if variant == STOCK:
        ours = yaml.safe_load(dagster_yaml(home))
        ours.pop("compute_logs")
        return LOCAL_COMPUTE_LOGS.format(home=home) + yaml.safe_dump(ours, sort_keys=False)
    if variant == OURS:
        return dagster_yaml(home)
    if variant == RUN_DATABASES:
        return run_database_dagster_yaml(home)
    return None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2,000 cases, 2 rounds")
    parser.add_argument("--before", type=Path, help="an earlier checkout, measured in turn")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    n, rounds = (2_000, 2) if args.quick else (args.cases, args.rounds)
    variants = [STOCK, OURS, RUN_DATABASES, *([BEFORE] if args.before else [])]
    if args.before:
        args.before = check_checkout(args.before)
    recorded = write_recorded_run(WORK / f"shards-{n}", n)
    command = recorded.run_command("--shards", "2", "--metrics", ",".join(FOUR))
    top = Path(tempfile.mkdtemp(prefix="instance-classes-", dir=WORK))
    fresh: dict[str, list[dict]] = {name: [] for name in variants}
    again: dict[str, list[dict]] = {name: [] for name in variants}
    try:
        for number in range(rounds):
            for index, name in enumerate(variants):
                home = top / f"{number}-{index}"
                dagster = home / "dagster"
                dagster.mkdir(parents=True)
                text = _dagster_yaml(name, dagster)
                if text is not None:
                    (dagster / "dagster.yaml").write_text(text, encoding="utf-8")
                env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(dagster))
                if name == BEFORE:
                    env["PYTHONPATH"] = str(args.before.resolve())
                fresh[name].append(measure_json_command(command, env, REPO))
                again[name].append(measure_json_command(command, env, REPO))
                shutil.rmtree(home, ignore_errors=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    table = _table(fresh, again, n)
    ours, stock = (_median(fresh[name], "wall_s") for name in (OURS, STOCK))
    publish(
        [table], args.emit, headline=f"ragproof's compute logs {ours / stock:.2f}x Dagster's wall"
    )


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(m[key] for m in runs)


def _table(fresh: dict[str, list[dict]], again: dict[str, list[dict]], n: int) -> Table:
    rows = []
    for name in fresh:
        for when, runs in (("fresh home", fresh[name]), ("the same home again", again[name])):
            rows.append(
                [
                    f"{name}, {when}",
                    " / ".join(f"{m['wall_s']:.2f}" for m in runs) + " s",
                    f"{_median(runs, 'wall_s'):.2f} s",
                    f"{_median(runs, 'cpu_s'):.2f} s",
                    " / ".join(f"{m['load']:.1f}" for m in runs),
                ]
            )
    notes = []
    for name in fresh:
        if name == STOCK:
            continue
        ratio = _median(fresh[name], "wall_s") / _median(fresh[STOCK], "wall_s")
        ratio_again = _median(again[name], "wall_s") / _median(again[STOCK], "wall_s")
        notes.append(
            f"Median wall, {name} against Dagster's classes throughout: {ratio:.2f}x on a fresh "
            f"home, {ratio_again:.2f}x on the same home again."
        )
    return Table(
        f"`ragproof run --shards 2 --metrics` (four), {count(n)} recorded cases: the "
        "instance's classes alternated, each in a fresh store and home, then again on it",
        [
            "dagster.yaml",
            "wall, each round",
            "median wall",
            "median CPU (command)",
            "1-min load before each",
        ],  # fmt: skip
        rows,
        [
            *notes,
            "CPU is the command's own process: the step processes are children of its "
            "forkserver and not counted.",
        ],
    )


if __name__ == "__main__":
    main()
