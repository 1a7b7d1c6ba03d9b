"""Step logs with and without helper processes (issue 24, item 5).

The four-metric ``ragproof run --shards 2`` of ``run_floor`` on the same recorded
cases (``_synthetic.write_recorded_run``), each time with a fresh store and Dagster
home, alternating two homes' ``dagster.yaml``:

- Dagster's ``LocalComputeLogManager`` (named in the home's dagster.yaml as Dagster's
  default for a home is; every home ragproof created before this change had it): a
  ``tail -F`` and a watcher process per stream of every step;
- ragproof's ``MirroredComputeLogManager`` (the dagster.yaml ragproof writes now,
  ``ragproof_cli/instance.py``): the same files, copied to the terminal by a thread.

The machine is shared: the 1-minute load is beside each figure, and the two are
compared by their medians over rounds run side by side.

``python -m benchmarks.compute_logs [--cases N] [--rounds N] [--quick]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import REPO, WORK, Table, clean_env, count, measure_json_command, publish
from benchmarks._synthetic import write_recorded_run
from benchmarks.run_floor import FOUR

# Dagster's own manager, named as its default for a home is: a dagster.yaml naming no
# manager at all would be one an earlier ragproof wrote, which ragproof now replaces.
STOCK_YAML = """telemetry:
  enabled: false
compute_logs:
  module: dagster._core.storage.local_compute_log_manager
  class: LocalComputeLogManager
  config:
    base_dir: {home}/storage
"""
MANAGERS = ("Dagster's LocalComputeLogManager", "ragproof's MirroredComputeLogManager")


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
    top = Path(tempfile.mkdtemp(prefix="compute-logs-", dir=WORK))
    measured: dict[str, list[dict]] = {name: [] for name in MANAGERS}
    try:
        for number in range(rounds):
            for index, name in enumerate(MANAGERS):
                home = top / f"{number}-{index}"
                (home / "dagster").mkdir(parents=True)
                if index == 0:
                    (home / "dagster" / "dagster.yaml").write_text(
                        STOCK_YAML.format(home=home / "dagster"), encoding="utf-8"
                    )
                env = clean_env(
                    RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster")
                )
                measured[name].append(measure_json_command(command, env, REPO))
                shutil.rmtree(home, ignore_errors=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    publish([_table(measured, n)], args.emit)


def _table(measured: dict[str, list[dict]], n: int) -> Table:
    rows = []
    for name, runs in measured.items():
        rows.append(
            [
                name,
                " / ".join(f"{m['wall_s']:.2f}" for m in runs) + " s",
                f"{statistics.median(m['wall_s'] for m in runs):.2f} s",
                f"{statistics.median(m['cpu_s'] for m in runs):.2f} s",
                " / ".join(f"{m['load']:.1f}" for m in runs),
            ]
        )
    stock, ours = (statistics.median(m["wall_s"] for m in measured[name]) for name in MANAGERS)
    return Table(
        f"`ragproof run --shards 2 --metrics` (four), {count(n)} recorded cases, "
        "fresh store and home: the two compute log managers alternated",
        [
            "compute log manager",
            "wall, each round",
            "median wall",
            "median CPU (command)",
            "1-min load before each",
        ],  # fmt: skip
        rows,
        [
            f"Median wall: ragproof's manager {ours:.2f} s against Dagster's {stock:.2f} s "
            f"({ours / stock:.2f}x, {stock - ours:+.2f} s saved).",
            "CPU is the command's own process: the step processes, where the helper "
            "processes were started, are children of its forkserver and not counted.",
        ],
    )


if __name__ == "__main__":
    main()
