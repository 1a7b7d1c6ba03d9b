"""A year of runs (CONTRACT section 31): every command as fast with many stored runs as
with few.

    .venv/bin/python -m benchmarks.run_all --only store_scale          # 10, 1,000, 10,000
    .venv/bin/python -m benchmarks.run_all --only store_scale -- --sizes 10,1000
    .venv/bin/python -m benchmarks.store_scale --verify-only --sizes 10,100,1000

Each store is filled through the store's own write path in this process (50-case runs
of one dataset, six metrics a case: the files `ragproof run` writes, the catalog
compacting as a run's end does; 10,000 launches of the command would take hours), then
``--cli-runs`` runs of ``ragproof run`` on a 50-case recorded dataset are added through
the installed command, whose median wall is "a run". Each command is timed as the
installed command (median of ``--rounds``, alternated between the stores), with the
1-minute load beside it; `ragproof verify` once per store. ``ragproof serve`` runs on
each store and Chromium (Playwright, ``/usr/bin/chromium``) opens its runs page and the
dataset's trend: first contentful paint, the median of ``--rounds`` opens after the
first. Bytes per run are the store's size over its runs and DAGSTER_HOME's over the
command's runs.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from benchmarks._common import RAGPROOF, REPO, WORK, Benchmark, Table, clean_env, publish, seconds
from benchmarks._synthetic import write_recorded_run
from benchmarks.results_browser import open_page, write_stored_run
from ragproof_core.store import RunStore
from ragproof_core.store.query import run_read_only

BENCHMARK = Benchmark(
    title="A year of runs: commands against the number of stored runs",
    measures=(
        "Stores of 10, 1,000 and 10,000 runs (50 cases and 6 metrics a run, written "
        "through the store's write path; `--sizes`), each with a few `ragproof run`s of "
        "a 50-case recorded dataset added through the command: a run's wall, `runs`, "
        "`show`, three `sql` queries (the runs, the summaries aggregated, one run's case "
        "results) and a full scan of every case result, `verify`, the browser's runs and "
        "trends pages to first paint (Chromium), and bytes per run of the store and of "
        "DAGSTER_HOME; the 1-minute load beside each."
    ),
    target="every figure at the largest size within 1.2x of the smallest, but the full scan",
    order=95,
    args=("--sizes", "10,1000,10000"),
    in_run_all=False,
)

RUN_CASES = 50
T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUERIES = {
    "sql: runs": "SELECT count(*), max(started_at) FROM runs WHERE status = 'completed'",
    "sql: summaries": "SELECT metric, avg(mean) FROM metric_summaries GROUP BY metric",
    "sql: one run's case results": "SELECT count(*), avg(value) FROM case_results "
    "WHERE run_id = '{run}'",
    "sql: full scan": "SELECT count(*), avg(value) FROM case_results",
}
# write_stored_run's dataset for runs of other than its own 20 cases: the stored runs'.
STORED_DATASET = "data/bench/big.jsonl"
PAGES = {
    "page: runs (first paint)": "/runs",
    "page: trends (first paint)": "/trends?dataset=" + quote(STORED_DATASET, safe=""),
}
# Figures whose ratio is not held to the target (section 31 exempts the full scan;
# verify reads every byte: linear in the store's size by design).
LINEAR = ("sql: full scan", "verify (every file's sha256)")


def load() -> float:
    return os.getloadavg()[0]


def run_id(index: int) -> str:
    return f"{T0 + timedelta(hours=index):%Y%m%dT%H%M%SZ}-{index:06x}"


def fill(root: Path, runs: int) -> RunStore:
    """``runs`` finished runs of ``RUN_CASES`` cases, an hour apart, through ``RunStore``:
    written in memory (``/dev/shm``, where the store's fsyncs cost nothing: most of a
    write's time on disk), then copied to ``root`` with its hard links (``cp -a``)."""
    shm = Path("/dev/shm")
    build = shm / f"ragproof-{root.parent.name}" if shm.is_dir() else root
    shutil.rmtree(build, ignore_errors=True)
    store = RunStore(build)
    rng = random.Random(31)
    for index in range(runs):
        write_stored_run(store, run_id(index), RUN_CASES, T0 + timedelta(hours=index), rng)
    if build != root:
        root.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(build), str(root)], check=True)
        shutil.rmtree(build)
    store = RunStore(root)
    store.ensure_views()
    return store


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def home_growth(sizes: Sequence[int]) -> float:
    """DAGSTER_HOME's bytes a run adds: from the first run to the last when there are two
    or more (the first creates the instance's databases), else the first run's."""
    if len(sizes) > 2:
        return (sizes[-1] - sizes[1]) / (len(sizes) - 2)
    return float(sizes[-1] - sizes[0])


def timed(args: Sequence[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([RAGPROOF, *args], env=env, capture_output=True, text=True, cwd=REPO)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"ragproof {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return took


@functools.cache
def recorded() -> Path:
    return write_recorded_run(WORK / "store-scale-recorded", RUN_CASES).config


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--cli-runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="sizes 10 and 40, one round")
    parser.add_argument("--emit", type=Path)
    parser.add_argument(
        "--pages-only",
        action="store_true",
        help="only the browser's pages, on the stores a former run left (filled if absent)",
    )
    parser.add_argument(
        "--verify-only",
        action="store_true",
        help="only `ragproof verify` and `verify --json`, on stores filled as above",
    )
    args = parser.parse_args(argv)
    sizes = [10, 40] if args.quick else [int(s) for s in args.sizes.split(",")]
    rounds = 1 if args.quick else args.rounds
    if args.pages_only:
        publish([pages_only(sizes, rounds)], None)
        return
    if args.verify_only:
        publish([verify_only(sizes, rounds)], args.emit)
        return
    stores: dict[int, dict] = {}
    for size in sizes:
        root = WORK / f"store-scale-{size}"
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        fill(root / "store", size)
        print(f"{size:,} runs written in {time.perf_counter() - started:.0f} s", flush=True)
        (root / "home").mkdir(parents=True)
        env = clean_env(RAGPROOF_STORE=str(root / "store"), DAGSTER_HOME=str(root / "home"))
        config = recorded()
        walls, homes = [], [folder_bytes(root / "home")]
        for _ in range(args.cli_runs):
            before = load()
            command = ["run", "--dataset", str(config.parent / "cases.jsonl"), "--config"]
            walls.append((timed([*command, str(config), "--json"], env), before))
            homes.append(folder_bytes(root / "home"))
        stores[size] = {
            "env": env,
            "root": root,
            "runs": size + args.cli_runs,
            "walls": walls,
            "homes": homes,
        }
    inner = in_process(sizes, {s: RunStore(stores[s]["root"] / "store") for s in sizes}, rounds)
    figures: dict[str, dict[int, list[tuple[float, float]]]] = {}

    def measure(name: str, size: int, command: Sequence[str]) -> None:
        before = load()
        took = timed(command, stores[size]["env"])
        figures.setdefault(name, {}).setdefault(size, []).append((took, before))

    for _ in range(rounds):
        for size in sizes:  # alternated: the load hits every size alike
            measure("runs", size, ["runs"])
            measure("show", size, ["show", run_id(0)])
            for name, query in QUERIES.items():
                measure(name, size, ["sql", query.format(run=run_id(3))])
    for size in sizes:
        measure("verify (every file's sha256)", size, ["verify"])
        figures.setdefault("a run (ragproof run, 50 cases)", {})[size] = stores[size]["walls"]
    pages(sizes, stores, rounds, figures)
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
        stores[size]["home_bytes"] = home_growth(stores[size]["homes"])
    rows.append(
        ["bytes per run: store"] + [f"{stores[s]['store_bytes'] / 1024:,.0f} KB" for s in sizes]
    )
    rows[-1].append("-")
    rows.append(
        ["bytes per run: DAGSTER_HOME (a command run's growth)"]
        + [f"{stores[s]['home_bytes'] / 1024:,.0f} KB" for s in sizes]
        + ["-"]
    )
    table = Table(
        f"Commands against the number of stored runs (median of {rounds}, alternated; "
        "wall of the installed command, load before it)",
        ["measure", *(f"{s:,} runs" for s in sizes), f"{largest:,} / {smallest:,}"],
        rows,
        [
            f"Stored runs: {RUN_CASES} cases and 6 metrics each, one dataset, written through "
            "RunStore (benchmarks/results_browser.py's write_stored_run); 'a run' is "
            f"`ragproof run` on a {RUN_CASES}-case recorded dataset (benchmarks/_synthetic.py), "
            "no judge.",
            "Pages: `ragproof serve` on each store, Chromium's first contentful paint from "
            "the start of the navigation, the median of the opens after the first.",
            "verify reads every file of the store against its sha256: linear in its size.",
            "DAGSTER_HOME: what one command run adds, from the first run's end to the last's "
            "(the first creates the instance's databases).",
            "The trends page draws a dataset's newest 200 runs: a store of 10 draws 10.",
        ],
    )
    publish([table, inner], args.emit, headline=_headline(table))


def pages(
    sizes: Sequence[int],
    stores: dict[int, dict],
    rounds: int,
    figures: dict[str, dict[int, list[tuple[float, float]]]],
) -> None:
    """Each store's runs and trends pages in Chromium, a server per store, alternated."""
    from tests.support.browser import chromium

    servers = {}
    try:
        for size in sizes:
            proc = subprocess.Popen(
                [RAGPROOF, "serve"],
                env=stores[size]["env"],
                cwd=REPO,
                stdout=subprocess.PIPE,
                text=True,
            )
            servers[size] = proc
            line = proc.stdout.readline()
            stores[size]["base"] = re.search(r"(http://127\.0\.0\.1:\d+)/", line).group(1)
        with chromium() as browser:
            for size in sizes:  # the first open of each page (a cold server) is not counted
                for path in PAGES.values():
                    open_page(browser, _page_url(stores[size]["base"], path))
            for _ in range(rounds):
                for size in sizes:
                    for name, path in PAGES.items():
                        before = load()
                        paint, _ = open_page(browser, _page_url(stores[size]["base"], path))
                        figures.setdefault(name, {}).setdefault(size, []).append(
                            (paint / 1000, before)
                        )
    finally:
        for proc in servers.values():
            proc.terminate()
            proc.wait(timeout=30)


def served(
    sizes: Sequence[int],
    stores: dict[int, dict],
    rounds: int,
    figures: dict[str, dict[int, list[tuple[float, float]]]],
) -> None:
    """Each page answered by the app in this process, alternated between the stores."""
    from starlette.testclient import TestClient

    from ragproof_serve.app import Browser, build_app

    clients = {}
    for size in sizes:
        browser = Browser(RunStore(stores[size]["root"] / "store"))
        browser.warm()
        clients[size] = TestClient(build_app(browser, 8000), base_url="http://127.0.0.1:8000")
    for round_ in range(rounds + 1):  # the first answer of each page is not counted
        for size in sizes:
            for name, path in PAGES.items():
                before = load()
                started = time.perf_counter()
                answered = clients[size].get(path)
                took = time.perf_counter() - started
                if answered.status_code != 200:
                    raise RuntimeError(f"{path}: {answered.status_code}")
                if round_ > 0:
                    label = name.replace("(first paint)", "(served)")
                    figures.setdefault(label, {}).setdefault(size, []).append((took, before))


def _page_url(base: str, path: str) -> str:
    return base + path


def pages_only(sizes: Sequence[int], rounds: int) -> Table:
    """The browser's pages alone, on each size's store as a former run left it (its
    stored runs and its command runs), filled through the write path where none is."""
    stores: dict[int, dict] = {}
    for size in sizes:
        root = WORK / f"store-scale-{size}"
        if not (root / "store" / "runs").is_dir():
            shutil.rmtree(root, ignore_errors=True)
            fill(root / "store", size)
        (root / "home").mkdir(parents=True, exist_ok=True)
        env = clean_env(RAGPROOF_STORE=str(root / "store"), DAGSTER_HOME=str(root / "home"))
        stores[size] = {"env": env, "root": root, "runs": RunStore(root / "store").count_runs()}
    figures: dict[str, dict[int, list[tuple[float, float]]]] = {}
    pages(sizes, stores, rounds, figures)
    served(sizes, stores, rounds, figures)
    smallest, largest = sizes[0], sizes[-1]
    rows = []
    for name, by_size in figures.items():
        medians = {s: statistics.median(t for t, _ in by_size[s]) for s in sizes}
        loads = {s: statistics.median(lo for _, lo in by_size[s]) for s in sizes}
        rows.append(
            [name]
            + [f"{seconds(medians[s])} (load {loads[s]:.1f})" for s in sizes]
            + [f"{medians[largest] / medians[smallest]:.2f}x"]
        )
    return Table(
        f"The browser's pages against the number of stored runs (median of {rounds}, "
        "alternated; load before each open)",
        ["page", *(f"{stores[s]['runs']:,} runs" for s in sizes), f"{largest:,} / {smallest:,}"],
        rows,
        [
            "`--pages-only`: `ragproof serve` on each store, Chromium's first contentful "
            "paint from the start of the navigation, the median of the opens after the first.",
            "served: the page's HTML answered by the app in this process (Starlette's test "
            "client, the server warmed as `serve` warms it): the store's part of the page.",
            f"The trends page is the stored runs' dataset ({STORED_DATASET}): its newest 200 "
            "runs (TREND_RUNS), every run of a smaller store.",
        ],
    )


def verify_only(sizes: Sequence[int], rounds: int) -> Table:
    """`ragproof verify` (every file's sha256) on a store of each size, filled through the
    store's write path (``fill``), alternated between the sizes: its time and its time a
    stored run, which a linear check keeps flat."""
    stores: dict[int, dict] = {}
    for size in sizes:
        root = WORK / f"store-verify-{size}"
        if not (root / "store" / "runs").is_dir():  # a former run's store is read again
            shutil.rmtree(root, ignore_errors=True)
            started = time.perf_counter()
            fill(root / "store", size)
            print(f"{size:,} runs written in {time.perf_counter() - started:.0f} s", flush=True)
        (root / "home").mkdir(parents=True, exist_ok=True)
        env = clean_env(RAGPROOF_STORE=str(root / "store"), DAGSTER_HOME=str(root / "home"))
        stores[size] = {"env": env, "bytes": folder_bytes(root / "store")}
    took: dict[int, list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for size in sizes:
            before = load()
            took.setdefault(size, []).append((timed(["verify"], stores[size]["env"]), before))
    medians = {s: statistics.median(t for t, _ in took[s]) for s in sizes}
    loads = {s: statistics.median(lo for _, lo in took[s]) for s in sizes}
    smallest, largest = sizes[0], sizes[-1]
    rows = [
        ["verify (every file's sha256)"]
        + [f"{seconds(medians[s])} (load {loads[s]:.1f})" for s in sizes]
        + [f"{medians[largest] / medians[smallest]:.2f}x"],
        [f"verify: each run beyond {smallest:,} (the difference over the runs added)"]
        + ["-"]
        + [f"{(medians[s] - medians[smallest]) / (s - smallest) * 1000:,.1f} ms" for s in sizes[1:]]
        + ["-"],
        ["store size"]
        + [f"{stores[s]['bytes'] / 2**20:,.1f} MiB" for s in sizes]
        + [f"{stores[largest]['bytes'] / stores[smallest]['bytes']:.0f}x"],
    ]
    return Table(
        f"`ragproof verify` against the number of stored runs (`--verify-only`, median of "
        f"{rounds}, alternated; wall of the installed command, load before it)",
        ["measure", *(f"{s:,} runs" for s in sizes), f"{largest:,} / {smallest:,}"],
        rows,
        [
            f"Stored runs as above ({RUN_CASES} cases and 6 metrics each, written through "
            "RunStore); verify reads every file of every run against the catalog's size and "
            "sha256: linear in the store's size (CONTRACT section 29): a fixed start (the "
            "interpreter, the imports, the catalog read) and a cost a run.",
        ],
    )


def _headline(table: Table) -> str:
    held = [
        row
        for row in table.rows
        if row[-1] != "-" and not any(row[0].startswith(name) for name in LINEAR)
    ]
    worst = max(held, key=lambda row: float(row[-1].rstrip("x")))
    return f"largest vs smallest store: worst {worst[-1]} ({worst[0]})"


def in_process(sizes: Sequence[int], stores: dict[int, RunStore], rounds: int) -> Table:
    """The store's readers timed in this process (no interpreter start, no imports): what
    each command spends on the store itself, alternated between the sizes."""
    work: dict[str, Callable[[RunStore], object]] = {
        "runs: the latest 50, their files checked": lambda st: st.check_listed(
            st.catalog_records("true", newest_first=True, limit=50)
        ),
        "show: the named run checked": lambda st: st.require_intact(run_id(0)),
        **{
            name: functools.partial(
                lambda q, st: run_read_only(st.layout, q), query.format(run=run_id(3))
            )
            for name, query in QUERIES.items()
        },
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
        f"{load():.1f} at the end)",
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
