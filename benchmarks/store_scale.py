"""A year of runs (CONTRACT section 31): every command as fast with many stored runs as
with few.

    .venv/bin/python -m benchmarks.store_scale [--sizes 10,1000,10000] [--cli-runs N] [--quick]

Each store is filled through the store's own write path in this process (50 cases a
run, every default metric's rows; the catalog compacts as a run's end does), then
``--cli-runs`` runs of ``ragproof run`` on a 50-case recorded dataset are added to it
through the installed command, whose median wall is "a run". Each command is timed
as the installed command (median of 3, alternated between the stores), with the
1-minute load beside it, and `ragproof verify` is timed once per store. Bytes per run
are the store's size over its runs and DAGSTER_HOME's over the command's runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import WORK, Benchmark, Table, publish, seconds
from ragproof_core.store import RunStore
from tests.core.store import sample

BENCHMARK = Benchmark(
    title="A year of runs: commands against the number of stored runs",
    measures=(
        "Stores of 10, 1,000 and 10,000 runs (the 4-case sample run of the store's tests, "
        "every default metric; filled through the store's write path; `--sizes`), each "
        "with a few `ragproof run`s added through the command: a "
        "run's wall, `runs`, `show`, three `sql` queries (the runs, the summaries "
        "aggregated, one run's case results) and a full scan of every case result, "
        "`verify`, and bytes per run of the store and of DAGSTER_HOME; the 1-minute load "
        "beside each."
    ),
    target="every figure at the largest size within 1.2x of the smallest, but the full scan",
    order=95,
    args=("--sizes", "10,1000"),
    in_run_all=False,
)

RAGPROOF = Path(os.environ.get("RAGPROOF_BIN", Path(__file__).parents[1] / ".venv/bin/ragproof"))
FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "serve"
QUERIES = {
    "sql: runs": "SELECT count(*), max(started_at) FROM runs WHERE status = 'completed'",
    "sql: summaries": "SELECT metric, avg(mean) FROM metric_summaries GROUP BY metric",
    "sql: one run's case results": "SELECT count(*), avg(value) FROM case_results "
    "WHERE run_id = '{run}'",
    "sql: full scan": "SELECT count(*), avg(value) FROM case_results",
}


def load() -> float:
    return os.getloadavg()[0]


def fill(root: Path, runs: int) -> RunStore:
    store = RunStore(root / "store")
    for index in range(runs):
        sample.write_run(store, f"r{index:06d}")
    return store


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(args: Sequence[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([str(RAGPROOF), *args], env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode not in (0,):
        raise RuntimeError(f"ragproof {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return took


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--cli-runs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="sizes 10 and 40")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    sizes = [10, 40] if args.quick else [int(s) for s in args.sizes.split(",")]
    stores: dict[int, dict] = {}
    for size in sizes:
        root = WORK / f"store-scale-{size}"
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        fill(root, size)
        env = {
            **os.environ,
            "RAGPROOF_STORE": str(root / "store"),
            "DAGSTER_HOME": str(root / "home"),
            "PYTHONPATH": str(Path(__file__).parents[1]),
        }
        env.pop("RAGPROOF_JUDGE_MODEL", None)
        (root / "home").mkdir(parents=True, exist_ok=True)
        print(f"{size} runs written in {time.perf_counter() - started:.0f} s", flush=True)
        walls = []
        for _ in range(args.cli_runs):
            before = load()
            walls.append(
                (
                    timed(
                        [
                            "run",
                            "--dataset",
                            str(FIXTURE / "cases.jsonl"),
                            "--config",
                            str(FIXTURE / "ragproof.toml"),
                            "--json",
                        ],
                        env,
                    ),
                    before,
                )
            )
        stores[size] = {"env": env, "root": root, "runs": size + args.cli_runs, "walls": walls}
    figures: dict[str, dict[int, list[tuple[float, float]]]] = {}

    def measure(name: str, size: int, command: Sequence[str]) -> None:
        before = load()
        took = timed(command, stores[size]["env"])
        figures.setdefault(name, {}).setdefault(size, []).append((took, before))

    for _ in range(args.rounds):
        for size in sizes:  # alternated: the load hits every size alike
            measure("runs", size, ["runs"])
            measure("show", size, ["show", "r000000"])
            for name, query in QUERIES.items():
                measure(name, size, ["sql", query.format(run="r000003")])
    for size in sizes:
        measure("verify", size, ["verify"])
        figures.setdefault("a run (ragproof run, 50 cases)", {})[size] = stores[size]["walls"]
    rows = []
    smallest, largest = sizes[0], sizes[-1]
    for name, by_size in figures.items():
        medians = {s: statistics.median(t for t, _ in by_size[s]) for s in sizes}
        loads = {s: statistics.median(lo for _, lo in by_size[s]) for s in sizes}
        ratio = medians[largest] / medians[smallest]
        rows.append(
            [name]
            + [f"{seconds(medians[s])} (load {loads[s]:.1f})" for s in sizes]
            + [f"{ratio:.2f}x"]
        )
    for size in sizes:
        root = stores[size]["root"]
        stores[size]["store_bytes"] = folder_bytes(root / "store") / stores[size]["runs"]
        stores[size]["home_bytes"] = folder_bytes(root / "home") / max(args.cli_runs, 1)
    rows.append(
        ["bytes per run: store"]
        + [f"{stores[s]['store_bytes'] / 1024:,.0f} KB" for s in sizes]
        + ["-"]
    )
    rows.append(
        ["bytes per run: DAGSTER_HOME (command runs)"]
        + [f"{stores[s]['home_bytes'] / 1024:,.0f} KB" for s in sizes]
        + ["-"]
    )
    table = Table(
        "Commands against the number of stored runs (median of "
        f"{args.rounds}, alternated; wall of the installed command)",
        ["measure", *(f"{s:,} runs" for s in sizes), f"{largest:,} / {smallest:,}"],
        rows,
        [
            "Stored runs: tests/core/store/sample.py's run (4 cases, every default metric), "
            "written through RunStore; 'a run' is `ragproof run` on "
            "tests/fixtures/serve (recorded outputs), no judge.",
            "verify reads every file of the store against its sha256: linear in its size.",
            "The browser's runs and trends pages were not timed here.",
        ],
    )
    summary = {s: {k: v for k, v in stores[s].items() if k in ("runs",)} for s in sizes}
    print(json.dumps(summary), flush=True)
    publish([table], args.emit, headline=f"{largest:,} vs {smallest:,} runs: see the table")


if __name__ == "__main__":
    main()
