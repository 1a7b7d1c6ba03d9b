"""The Dagster instance's classes and what a run pays for them (issue 24, item 5).

The four-metric ``ragproof run --shards 2`` of ``run_floor`` on the same recorded
cases (``_synthetic.write_recorded_run``), in a fresh store and Dagster home and then
again on that home, alternating the home's ``dagster.yaml``:

- Dagster's own classes (named as its defaults for a home are): the
  ``LocalComputeLogManager`` (a ``tail -F`` and a watcher process per stream of every
  step) and ``storage: sqlite`` (an SQLAlchemy engine for every event a step writes,
  and each database's migration scripts loaded by every process that touches it);
- ragproof's compute log manager with Dagster's storage (what ragproof wrote from
  2026-12-03);
- ragproof's compute log manager and storage (``ragproof_cli/instance.py`` now:
  ``ragproof_assets/instance/``).

The machine is shared: the 1-minute load is beside each figure, and the variants are
compared by their medians over rounds run side by side.

``python -m benchmarks.instance_classes [--cases N] [--rounds N] [--quick]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import (
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    measure_json_command,
    publish,
)
from benchmarks._synthetic import write_recorded_run
from benchmarks.run_floor import FOUR
from ragproof_cli.instance import dagster_yaml, earlier_dagster_yamls

BENCHMARK = Benchmark(
    title="The Dagster instance's classes",
    measures=(
        "The four-metric `ragproof run --shards 2` of `run_floor.py` on 100,000 recorded "
        "cases, in a fresh store and Dagster home and again on that home, alternating the "
        "dagster.yaml variants: Dagster's own classes and ragproof's; every round's wall "
        "and the medians, the 1-minute load beside."
    ),
    target="the whole run <= 2x the floor (with `run_floor.py`)",
    order=110,
    in_run_all=False,
)

# Dagster's own classes, named as its defaults for a home are: a dagster.yaml naming
# none at all would be one an earlier ragproof wrote, which ragproof now replaces.
STOCK_YAML = """telemetry:
  enabled: false
compute_logs:
  module: dagster._core.storage.local_compute_log_manager
  class: LocalComputeLogManager
  config:
    base_dir: {home}/storage
storage:
  sqlite:
    base_dir: {home}
"""
VARIANTS = (
    "Dagster's compute logs and storage",
    "ragproof's compute logs, Dagster's storage",
    "ragproof's compute logs and storage",
)


def _dagster_yaml(variant: int, home: Path) -> str:
    if variant == 0:
        return STOCK_YAML.format(home=home)
    if variant == 1:
        # Written as that ragproof wrote it: ragproof_cli must not bring it up to date.
        return earlier_dagster_yamls(home)[1] + f"storage:\n  sqlite:\n    base_dir: {home}\n"
    return dagster_yaml(home)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2,000 cases, 2 rounds")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    n, rounds = (2_000, 2) if args.quick else (args.cases, args.rounds)
    recorded = write_recorded_run(WORK / f"shards-{n}", n)
    command = recorded.run_command("--shards", "2", "--metrics", ",".join(FOUR))
    top = Path(tempfile.mkdtemp(prefix="instance-classes-", dir=WORK))
    fresh: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    again: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    try:
        for number in range(rounds):
            for index, name in enumerate(VARIANTS):
                home = top / f"{number}-{index}"
                dagster = home / "dagster"
                dagster.mkdir(parents=True)
                (dagster / "dagster.yaml").write_text(
                    _dagster_yaml(index, dagster), encoding="utf-8"
                )
                env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(dagster))
                fresh[name].append(measure_json_command(command, env, REPO))
                again[name].append(measure_json_command(command, env, REPO))
                shutil.rmtree(home, ignore_errors=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    publish([_table(fresh, again, n)], args.emit)


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(m[key] for m in runs)


def _table(fresh: dict[str, list[dict]], again: dict[str, list[dict]], n: int) -> Table:
    rows = []
    for name in VARIANTS:
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
    stock, _, ours = (_median(fresh[name], "wall_s") for name in VARIANTS)
    stock_again, _, ours_again = (_median(again[name], "wall_s") for name in VARIANTS)
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
            f"Median wall, ragproof's classes against Dagster's: {ours:.2f} s against "
            f"{stock:.2f} s on a fresh home ({ours / stock:.2f}x), {ours_again:.2f} s against "
            f"{stock_again:.2f} s on the same home again ({ours_again / stock_again:.2f}x).",
            "CPU is the command's own process: the step processes are children of its "
            "forkserver and not counted.",
        ],
    )


if __name__ == "__main__":
    main()
