"""Benchmark: the results browser (`ragproof serve`) on a big store: time to first paint.

Targets (issue 25): the runs page and a dataset's trend over 1,000 stored runs, and
a case search over a 100,000-case run, each painted in under 1 s. The store is
written with the store's own writers (``RunStore``: the files ``ragproof run``
writes): 1,000 runs of one dataset (20 cases, 6 metrics each) and one run of
100,000 cases. ``ragproof serve`` runs in its own process; Debian's Chromium
(Playwright) opens each page and the figure is the page's first contentful paint
as Chromium's Performance API reports it (milliseconds from the start of the
navigation: the request, the server's work, the transfer, the page's script and
the first paint), then the time until the page says it is drawn
(``body[data-ready]``). The first open of each page is shown apart (the trend
reads every run's scores once and keeps them: finished runs never change), then
the median of three more. The 1-minute load average is read before each page.

    .venv/bin/python -m benchmarks.results_browser [--quick]
"""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from benchmarks._common import (
    RAGPROOF,
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    parse_args,
    publish,
    verdict,
)
from ragproof_core.model import Answer, Case, CaseKind, CaseOutput, Chunk, scored, skipped
from ragproof_core.store.run_store import RunRecord, RunStore

BENCHMARK = Benchmark(
    title="Results browser (`ragproof serve`)",
    measures=(
        "`ragproof serve` (own process) over a store written with `RunStore`: 1,000 runs "
        "of one dataset (20 cases, 6 metrics) and one 100,000-case run. Chromium "
        "(Playwright, `/usr/bin/chromium`) opens the runs page, the dataset's trend, and "
        "a case search by text and by a metric's status; first contentful paint "
        "(Performance API, from the start of the navigation) and the time to the page's "
        "drawn flag, the first open and the median of 3 more, with the 1-minute load "
        "before each page."
    ),
    target="first paint < 1 s each",
    order=80,
    in_run_all=False,
)

RUNS, QUICK_RUNS = 1_000, 50
BIG, QUICK_BIG = 100_000, 5_000
RUN_CASES = 20
TARGET_MS = 1_000
OPENS = 3
DATASET = "data/bench/cases.jsonl"
METRICS = (
    "retrieval.precision_at_k",
    "retrieval.recall_at_k",
    "retrieval.mrr",
    "generation.groundedness",
    "generation.answer_relevance",
    "robustness.abstention",
)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [
    "refund",
    "warranty",
    "office",
    "contract",
    "invoice",
    "parcel",
    "delivery",
    "support",
    "account",
]


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def write_stored_run(
    store: RunStore, run_id: str, n: int, started: datetime, rng: random.Random
) -> None:
    """A finished ``n``-case run of 6 metrics through the store's own writers."""
    cases, outputs, results = [], [], []
    for i in range(n):
        case_id = f"c{i:06d}"
        words = " ".join(rng.choice(WORDS) for _ in range(8))
        cases.append(Case(case_id, f"What about the {words}?", CaseKind.QA, ("d1",), "yes"))
        chunk = Chunk("d1", f"The {words} policy says yes.")
        outputs.append(
            CaseOutput(
                case_id, Answer(f"It says yes: {words}.", (chunk,), ("d1",)), None, None, 0.1
            )
        )
        for metric in METRICS[:-1]:
            value = rng.choice((0.0, 0.5, 1.0)) if "generation" in metric else rng.random()
            results.append(scored(case_id, metric, value))
        results.append(skipped(case_id, METRICS[-1], "case is not unanswerable"))
    store.write_manifest(run_id, {"run_id": run_id, "dataset": DATASET})
    store.write_dataset(run_id, cases)
    store.write_outputs(run_id, outputs)
    store.write_case_results(run_id, results)
    store.write_summaries(run_id, [])
    store.write_run(
        RunRecord(
            run_id=run_id,
            dataset=DATASET if n == RUN_CASES else "data/bench/big.jsonl",
            adapter="bench:Recorded",
            status="completed",
            started_at=started,
            finished_at=started + timedelta(seconds=5),
            judge_model="openai/judge-test",
            prompt_hashes={},
            config_json=json.dumps({"run": {"k": 5, "source_match": "chunk"}}),
            cost_usd=0.0,
            cases=n,
            case_failures=0,
            judge_requests=0,
            cache_hits=0,
            judge_mode="per_metric",
        )
    )


def build_store(root: Path, runs: int, big: int) -> str:
    """``runs`` small runs of one dataset and one ``big``-case run; the big run's id."""
    store = RunStore(root)
    rng = random.Random(25)
    for index in range(runs):
        started = T0 + timedelta(hours=index)
        write_stored_run(
            store, started.strftime("%Y%m%dT%H%M%SZ") + f"-{index:06x}", RUN_CASES, started, rng
        )
    big_id = "20270101T000000Z-b19b19"
    write_stored_run(store, big_id, big, T0 + timedelta(days=400), rng)
    store.ensure_views()
    return big_id


_PAINT = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return paint ? paint.startTime : null;
}"""


def open_page(browser, url: str) -> tuple[float, float]:
    """(first contentful paint, drawn) in ms from the start of the navigation."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        start = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']", timeout=120_000)
        drawn = (time.perf_counter() - start) * 1000
        paint = None
        for _ in range(50):  # the paint entry is queued just after the frame
            paint = page.evaluate(_PAINT)
            if paint is not None:
                break
            page.wait_for_timeout(20)
        return float(paint), drawn
    finally:
        page.close()


def measure(runs: int, big: int) -> list[dict]:
    from tests.support.browser import chromium

    home = Path(tempfile.mkdtemp(prefix="serve-", dir=WORK))
    try:
        start = time.perf_counter()
        big_id = build_store(home / "store", runs, big)
        built_s = time.perf_counter() - start
        env = clean_env(RAGPROOF_STORE=str(home / "store"))
        start_load = _load()
        start = time.perf_counter()
        proc = subprocess.Popen(
            [RAGPROOF, "serve"], env=env, cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        try:
            line = proc.stdout.readline()
            # Before it prints its address the app reads every run's record and scores.
            started_s = time.perf_counter() - start
            base = re.search(r"(http://127\.0\.0\.1:\d+)/", line).group(1)
            pages = [
                (f"runs page ({runs:,} runs)", "/runs"),
                (f"trend of one dataset ({runs:,} runs)", "/trends?dataset=" + quote(DATASET)),
                (f"case search, text ({big:,} cases)", f"/runs/{big_id}/cases?q=parcel+refund"),
                (
                    f"case search, metric status ({big:,} cases)",
                    f"/runs/{big_id}/cases?metric=robustness.abstention&status=skipped",
                ),
            ]
            found = []
            with chromium() as browser:
                for name, path in pages:
                    load = _load()
                    first = open_page(browser, base + path)
                    again = [open_page(browser, base + path) for _ in range(OPENS)]
                    found.append(
                        {
                            "page": name,
                            "load": load,
                            "first": first,
                            "paint_ms": statistics.median(a[0] for a in again),
                            "drawn_ms": statistics.median(a[1] for a in again),
                        }
                    )
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        found.append({"built_s": built_s, "started_s": started_s, "start_load": start_load})
        return found
    finally:
        shutil.rmtree(home, ignore_errors=True)


def table(found: list[dict], quick: bool) -> Table:
    built = found[-1]["built_s"]
    rows = [
        [
            m["page"],
            f"{m['first'][0]:.0f} ms / {m['first'][1]:.0f} ms",
            f"{m['paint_ms']:.0f} ms",
            f"{m['drawn_ms']:.0f} ms",
            f"{m['load']:.2f}",
            verdict(max(m["first"][0], m["paint_ms"]) < TARGET_MS),
        ]
        for m in found[:-1]
    ]
    notes = [
        f"Target: first paint under {TARGET_MS} ms for each page, the first open included.",
        "First open: first contentful paint / drawn; then the median of "
        f"{OPENS} more opens. A new browser tab each time, Chromium already running.",
        f"The store was written in {built:.0f} s with `RunStore` (not timed above). "
        f"`ragproof serve` took {found[-1]['started_s']:.1f} s from its start to printing its "
        "address (Python and the app's imports, then every run's record and per-metric "
        f"scores read once; 1-minute load {found[-1]['start_load']:.2f}).",
    ]
    if quick:
        notes.append("--quick: a small store, a check that the script works, not the target.")
    return Table(
        "Results browser: time to first paint (`ragproof serve`, Chromium)",
        [
            "page",
            "first open: paint / drawn",
            "paint (median)",
            "drawn (median)",
            "1-min load",
            "target",
        ],
        rows,
        notes,
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("Benchmark: the results browser's time to first paint.", argv)
    WORK.mkdir(parents=True, exist_ok=True)
    found = measure(QUICK_RUNS if args.quick else RUNS, QUICK_BIG if args.quick else BIG)
    publish([table(found, args.quick)], args.emit)


if __name__ == "__main__":
    main()
