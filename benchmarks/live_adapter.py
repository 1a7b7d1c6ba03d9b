"""A live run against an HTTP service, beside a plain client loop (issue 51, item 4).

A local RAG service (its own process, aiohttp on 127.0.0.1) answers ``POST /retrieve``
and ``POST /answer`` after 20 ms each. ``ragproof run`` evaluates 10,000 cases through
``HttpAdapter`` (``url`` and ``retrieve_url``) at concurrency 16 with a metric of each
(``retrieval.precision_at_k`` and ``echo.exact_match``: both endpoints, 20,000
requests), and the same run on 10 cases (its fixed cost: the command's start, Dagster's
run, the store). Beside it, a plain ``httpx.AsyncClient`` loop, 16 workers sending each
question to ``/retrieve`` then ``/answer``: the floor any client pays. The two are
alternated in one session, each round on a fresh store; figures are medians.

Goal: the run's wall less its wall on 10 cases <= 1.1x the plain loop's wall. The
service counts its requests, so each side's 20,000 are checked, not assumed.

``python -m benchmarks.live_adapter [--quick]``
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks._common import (
    PYTHON,
    RAGPROOF,
    REPO,
    Benchmark,
    Table,
    clean_env,
    parse_args,
    publish,
    run_measured,
    seconds,
    verdict,
)

BENCHMARK = Benchmark(
    title="A live run against an HTTP service",
    measures=(
        "`ragproof run` through `HttpAdapter` (retrieve and answer, 20 ms each, their own "
        "process) on 10,000 cases at concurrency 16, less its wall on 10 cases, beside a "
        "plain `httpx.AsyncClient` loop sending the same 20,000 requests at the same "
        "concurrency; alternated, medians of the rounds."
    ),
    target="the run's wall less its 10-case wall <= 1.1x the plain loop",
    order=135,
)

LATENCY_S = 0.020
CONCURRENCY = 16
METRICS = "retrieval.precision_at_k,echo.exact_match"

SERVICE = """
import asyncio, json, sys
from aiohttp import web

count = {"/retrieve": 0, "/answer": 0}
CHUNK = {"id": "doc1#0", "text": "ragproof evaluates RAG pipelines.", "score": 0.75}

async def retrieve(request):
    await request.read()
    count["/retrieve"] += 1
    await asyncio.sleep(LATENCY)
    return web.json_response([CHUNK])

async def answer(request):
    body = await request.json()
    count["/answer"] += 1
    await asyncio.sleep(LATENCY)
    return web.json_response({"text": "echo: " + body["question"], "citations": ["doc1#0"]})

async def counts(request):
    return web.json_response(count)

async def main():
    app = web.Application()
    app.router.add_post("/retrieve", retrieve)
    app.router.add_post("/answer", answer)
    app.router.add_get("/count", counts)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

LATENCY = float(sys.argv[1])
asyncio.run(main())
"""


class Service:
    """The RAG service in its own process; ``base`` is its URL."""

    def __enter__(self) -> Service:
        self.process = subprocess.Popen(
            [PYTHON, "-c", SERVICE, str(LATENCY_S)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base = f"http://127.0.0.1:{self.process.stdout.readline().strip()}"
        return self

    def counts(self) -> dict[str, int]:
        return httpx.get(f"{self.base}/count").json()

    def __exit__(self, *exc: object) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def write_inputs(folder: Path, cases: int, base: str) -> tuple[Path, Path]:
    dataset = folder / f"cases-{cases}.jsonl"
    with dataset.open("w", encoding="utf-8") as out:
        for i in range(cases):
            case = {"id": f"c{i}", "question": f"question {i}", "expected_source_ids": ["doc1#0"]}
            out.write(json.dumps({**case, "expected_answer": f"echo: question {i}"}) + "\n")
    config = folder / "ragproof.toml"
    config.write_text(
        f"[run]\nconcurrency = {CONCURRENCY}\n\n"
        '[adapter]\ntarget = "ragproof_core.adapters.http:HttpAdapter"\n'
        f'options = {{ url = "{base}/answer", retrieve_url = "{base}/retrieve" }}\n',
        encoding="utf-8",
    )
    return dataset, config


def ragproof_wall(folder: Path, dataset: Path, config: Path, round_: int) -> tuple[float, dict]:
    store = folder / f"store-{dataset.stem}-{round_}"
    home = folder / f"home-{dataset.stem}-{round_}"
    home.mkdir()
    env = clean_env(RAGPROOF_STORE=str(store), DAGSTER_HOME=str(home))
    cmd = [RAGPROOF, "run", "--dataset", str(dataset), "--config", str(config)]
    child = run_measured([*cmd, "--metrics", METRICS, "--json"], env, REPO, timeout=3600)
    if child.returncode != 0:
        raise RuntimeError(f"ragproof run failed ({child.returncode}):\n{child.stderr[-3000:]}")
    return child.wall_s, json.loads(child.stdout)["adapter_calls"]


async def plain_loop(base: str, cases: int) -> float:
    """16 workers, each question to /retrieve then /answer: the floor any client pays."""
    questions = iter(range(cases))
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def worker() -> None:
            for i in questions:
                body = {"question": f"question {i}"}
                (await client.post(f"{base}/retrieve", json=body)).raise_for_status()
                (await client.post(f"{base}/answer", json=body)).raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return time.perf_counter() - started


def main(argv=None) -> None:
    args = parse_args(BENCHMARK.title, argv)
    cases, rounds = (500, 2) if args.quick else (10_000, 3)
    loads, plain, full, small = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="ragproof-live-") as tmp, Service() as service:
        folder = Path(tmp)
        dataset, config = write_inputs(folder, cases, service.base)
        ten, _ = write_inputs(folder, 10, service.base)
        for round_ in range(rounds):
            loads.append(os.getloadavg()[0])
            before = service.counts()
            plain.append(asyncio.run(plain_loop(service.base, cases)))
            sent = {k: service.counts()[k] - before[k] for k in before}
            assert sent == {"/retrieve": cases, "/answer": cases}, sent
            wall, calls = ragproof_wall(folder, dataset, config, round_)
            assert calls == {"retrieve": cases, "answer": cases}, calls
            full.append(wall)
            small.append(ragproof_wall(folder, ten, config, round_)[0])
            print(
                f"round {round_ + 1}: plain {plain[-1]:.2f} s, run {full[-1]:.2f} s, "
                f"10-case run {small[-1]:.2f} s (load {loads[-1]:.1f})",
                file=sys.stderr,
                flush=True,
            )
    floor = cases * 2 * LATENCY_S / CONCURRENCY
    plain_s, full_s, small_s = (statistics.median(v) for v in (plain, full, small))
    ratio = (full_s - small_s) / plain_s
    rows = [
        [f"round {i + 1}", seconds(p), seconds(f), seconds(s), f"{(f - s) / p:.2f}x", f"{ld:.1f}"]
        for i, (p, f, s, ld) in enumerate(zip(plain, full, small, loads, strict=True))
    ]
    rows.append(
        ["median", seconds(plain_s), seconds(full_s), seconds(small_s), f"{ratio:.2f}x", "-"]
    )
    tables = [
        Table(
            f"A live run: {cases:,} cases, both endpoints at {LATENCY_S * 1000:.0f} ms, "
            f"concurrency {CONCURRENCY}",
            ["round", "plain httpx loop", "ragproof run", "run on 10 cases", "ratio", "load"],
            rows,
            [
                f"the service's floor: {cases:,} x 2 requests x {LATENCY_S * 1000:.0f} ms / "
                f"{CONCURRENCY} = {floor:.1f} s",
                "ratio = (run - run on 10 cases) / plain loop; the service counted each "
                "side's requests: exactly one /retrieve and one /answer per case",
            ],
        ),
        Table(
            "A live run: target",
            ["target", "verdict"],
            [["run less its 10-case wall <= 1.1x the plain loop", verdict(ratio <= 1.1)]],
        ),
    ]
    headline = f"{cases:,} live cases at {ratio:.2f}x a plain httpx loop (fixed cost aside)"
    publish(tables, args.emit, headline=headline)


if __name__ == "__main__":
    main()
