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
import functools
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
from ragproof_core.store.query import run_read_only
from ragproof_core.store.verify import verify_store
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
    parser.add_argument(
        "--in-process-only",
        action="store_true",
        help="time the store's readers in this process only (no command started)",
    )
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
        for _ in range(0 if args.in_process_only else args.cli_runs):
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
    inner = in_process(sizes, {s: RunStore(stores[s]["root"] / "store") for s in sizes}, 5)
    if args.in_process_only:
        publish([inner], args.emit, headline=_headline(inner))
        return
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
    publish([inner, table], args.emit, headline=_headline(inner))


def _headline(table: Table) -> str:
    worst = max(
        (row for row in table.rows if "full scan" not in row[0] and "verify" not in row[0]),
        key=lambda row: float(row[-1].rstrip("x")),
    )
    return f"in-process, largest vs smallest store: worst {worst[-1]} ({worst[0]})"


def _query(query: str, store: RunStore) -> None:
    run_read_only(store.layout, query.format(run="r000003"))


def in_process(sizes: Sequence[int], stores: dict[int, RunStore], rounds: int) -> Table:
    """The store's readers timed in this process (no interpreter start, no imports): what
    each command spends on the store itself, alternated between the sizes."""
    work = {
        "runs: the latest 50, their files checked": lambda st: st.check_listed(
            st.catalog_records("true", newest_first=True, limit=50)
        ),
        "show: the named run checked": lambda st: st.require_intact("r000000"),
        **{name: functools.partial(_query, query) for name, query in QUERIES.items()},
        "verify (every file's sha256)": lambda st: verify_store(st),
    }
    took: dict[str, dict[int, list[float]]] = {}
    for _ in range(rounds):
        for size in sizes:
            for name, call in work.items():
                started = time.perf_counter()
                call(stores[size])
                took.setdefault(name, {}).setdefault(size, []).append(time.perf_counter() - started)
    smallest, largest = sizes[0], sizes[-1]
    rows = []
    for name, by_size in took.items():
        medians = {s: statistics.median(by_size[s]) for s in sizes}
        rows.append(
            [name]
            + [f"{medians[s] * 1000:,.0f} ms" for s in sizes]
            + [f"{medians[largest] / medians[smallest]:.2f}x"]
        )
    return Table(
        f"The store's readers in one process (median of {rounds}, alternated; load "
        f"{os.getloadavg()[0]:.1f} at the end)",
        ["reader", *(f"{s:,} runs" for s in sizes), f"{largest:,} / {smallest:,}"],
        rows,
        [
            "What each command spends on the store, without the interpreter's start and "
            "imports (the same for every size): the catalog read, the listed or named "
            "runs' files checked, the query.",
        ],
    )


if __name__ == "__main__":
    main()
