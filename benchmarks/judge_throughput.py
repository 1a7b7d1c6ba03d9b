"""Benchmarks 3 and 4: judge throughput, uncached and cached.

The judge is the test suite's OpenAI-compatible server (``tests/support/judge_server.py``)
in its own process, answering every request after a fixed latency (1 s: a
realistic judge), so the ideal wall time of N calls at concurrency C is
N x latency / C and anything above it is client overhead.

1. ``LiteLLMJudge.ask`` directly (real LiteLLM, real HTTP, no cache): 1,000
   calls at concurrency 16 and 64; wall time against the ideal, and client CPU
   time per call (``time.process_time()`` of this process over the burst).
2. ``ragproof run`` (the CLI, a child process) with the judge configured through
   the environment, on a recorded qa dataset sized for about 1,000 judge calls,
   concurrency from its ragproof.toml; the server counts the requests.
3. The same command again on the same store: every verdict comes from the judge
   cache, so the server must see no request at all.

``python -m benchmarks.judge_throughput [--quick]``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
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
    parse_args,
    publish,
    run_measured,
    seconds,
    verdict,
)
from benchmarks._synthetic import write_recorded_run

BENCHMARK = Benchmark(
    title="Judge throughput, uncached and cached",
    measures=(
        "1,000 `LiteLLMJudge.ask` calls at concurrency 16 and 64 against the local judge "
        "server (own process, 1 s latency): wall vs calls x latency / concurrency, client "
        "CPU per call. Then `ragproof run` with the judge on 200 qa cases (1,000 judge "
        "calls), and the same run again served from the judge cache."
    ),
    target="wall <= 1.25x ideal; cached re-run: 0 requests, < 1/10 of the uncached wall",
    order=30,
)

JUDGE_MODEL = "openai/judge-test"
JUDGE_CALLS_PER_QA_CASE = 5  # groundedness, citation support, relevance, completeness, refusal
TARGET_RATIO = 1.25  # wall / ideal
CACHED_TARGET = 0.1  # cached wall / uncached wall


@dataclass(frozen=True)
class Plan:
    latency_s: float
    calls: int
    concurrencies: tuple[int, ...]
    e2e_cases: int
    e2e_concurrency: int


FULL = Plan(latency_s=1.0, calls=1000, concurrencies=(16, 64), e2e_cases=200, e2e_concurrency=16)
QUICK = Plan(latency_s=0.2, calls=100, concurrencies=(16, 64), e2e_cases=20, e2e_concurrency=16)


class JudgeProcess:
    """The judge server in a child process; ``count()`` asks it how many requests it saw."""

    def __init__(self, latency_s: float) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self._proc = subprocess.Popen(
            [PYTHON, "-m", "benchmarks._judge_process", "--latency", str(latency_s)],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.close()
            raise RuntimeError(f"judge server did not start (said {self.url!r})")

    def count(self) -> int:
        self._proc.stdin.write("count\n")
        self._proc.stdin.flush()
        return int(self._proc.stdout.readline())

    def close(self) -> None:
        if self._proc.stdin and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> JudgeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- 1. LiteLLMJudge.ask directly ----------------------------------------------------------


@dataclass(frozen=True)
class Burst:
    concurrency: int
    calls: int
    wall_s: float
    cpu_s: float
    requests: int
    failures: int


def ask_burst(server: JudgeProcess, calls: int, concurrency: int, offset: int) -> Burst:
    from ragproof_core.judge.session import LiteLLMJudge
    from ragproof_core.judge.settings import JudgeEnv

    os.environ["OPENAI_API_KEY"] = "dummy"  # LiteLLM's openai provider wants one
    judge = LiteLLMJudge(
        JudgeEnv(model=JUDGE_MODEL, api_base=server.url),
        cache=None,
        use_cache=False,
        concurrency=concurrency,
    )

    def inputs(i: int) -> dict[str, str]:
        return {"question": f"What does clause {offset + i} say?", "answer": f"It says {i}."}

    async def run() -> Burst:
        # Not timed: the first call imports LiteLLM and builds its HTTP client.
        await judge.ask("answer_relevance", inputs(-1))
        before = server.count()
        cpu_start = time.process_time()
        start = time.perf_counter()
        verdicts = await asyncio.gather(
            *(judge.ask("answer_relevance", inputs(i)) for i in range(calls))
        )
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        requests = server.count() - before
        await judge.drain()
        return Burst(concurrency, calls, wall, cpu, requests, sum(not v.ok for v in verdicts))

    return asyncio.run(run())


# -- 2 and 3. ragproof run with a judge ----------------------------------------------------


@dataclass(frozen=True)
class CliRun:
    label: str
    wall_s: float
    requests: int
    judge_scored: int
    status: str


def _cli_run(label: str, server: JudgeProcess, env: dict[str, str], args: list[str]) -> CliRun:
    before = server.count()
    child = run_measured([RAGPROOF, "run", *args, "--json"], env, REPO, timeout=600)
    requests = server.count() - before
    if child.returncode != 0:
        raise RuntimeError(f"ragproof run failed ({child.returncode}):\n{child.stderr[-3000:]}")
    summary = json.loads(child.stdout)
    scored = summary["metrics"]["generation.groundedness"]["scored"]
    return CliRun(label, child.wall_s, requests, scored, summary["status"])


def cli_runs(server: JudgeProcess, plan: Plan) -> tuple[list[CliRun], int]:
    recorded = write_recorded_run(
        WORK / f"judge-e2e-{plan.e2e_cases}",
        plan.e2e_cases,
        qa_only=True,
        concurrency=plan.e2e_concurrency,
    )
    home = Path(tempfile.mkdtemp(prefix="judge-e2e-", dir=WORK))
    try:
        args = ["--dataset", str(recorded.dataset), "--config", str(recorded.config)]
        no_judge = clean_env(RAGPROOF_STORE=str(home / "plain"), DAGSTER_HOME=str(home / "dh0"))
        judged = clean_env(
            RAGPROOF_STORE=str(home / "store"),
            DAGSTER_HOME=str(home / "dh"),
            RAGPROOF_JUDGE_MODEL=JUDGE_MODEL,
            RAGPROOF_JUDGE_API_BASE=server.url,
            OPENAI_API_KEY="dummy",
        )
        runs = []
        for label, env in (
            ("no judge (baseline: startup, replay, store)", no_judge),
            ("judge, empty cache", judged),
            ("judge, cached re-run (same store)", judged),
        ):
            runs.append(_cli_run(label, server, env, args))
            print(f"ragproof run, {label}: {runs[-1].wall_s:.2f} s", flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return runs, recorded.qa_cases * JUDGE_CALLS_PER_QA_CASE


# -- tables --------------------------------------------------------------------------------


def tables(plan: Plan, bursts: list[Burst], runs: list[CliRun], expected: int, quick: bool):
    rows = []
    for b in bursts:
        ideal = b.calls * plan.latency_s / b.concurrency
        ratio = b.wall_s / ideal
        rows.append(
            [
                str(b.concurrency),
                count(b.calls),
                count(b.requests),
                seconds(b.wall_s),
                seconds(ideal),
                f"{ratio:.2f}x",
                f"{b.cpu_s / b.calls * 1000:.2f} ms",
                f"{b.calls / b.wall_s:.1f}",
                verdict(ratio <= TARGET_RATIO and b.failures == 0 and b.requests == b.calls),
            ]
        )
    notes = [
        f"Server latency {plan.latency_s:g} s per reply, in its own process; ideal = calls x "
        f"latency / concurrency. Target: wall <= {TARGET_RATIO:g}x ideal, every call a valid "
        "verdict, one request per call.",
        "Client CPU is this process's `time.process_time()` over the burst (LiteLLM, httpx, "
        "asyncio, ragproof's prompt rendering and reply validation), divided by the calls.",
        "Not timed: one warm-up call first (LiteLLM import, HTTP client setup).",
    ]
    if quick:
        notes.append("QUICK MODE: short latency and few calls; not a measurement.")
    direct = Table(
        "Judge throughput: `LiteLLMJudge.ask` over HTTP, no cache",
        [
            "concurrency",
            "calls",
            "server requests",
            "wall",
            "ideal",
            "wall / ideal",
            "client CPU / call",
            "calls/s",
            "target",
        ],
        rows,
        notes,
    )

    baseline, uncached, cached = runs
    concurrency = plan.e2e_concurrency
    cli_rows = []
    for run in runs:
        if run is baseline:
            ideal_cell, ratio_cell, target = "-", "-", "-"
        elif run is uncached:
            ideal = run.requests * plan.latency_s / concurrency
            ratio = run.wall_s / ideal
            ideal_cell = seconds(ideal)
            ratio_cell = (
                f"{ratio:.2f}x (judging alone: {(run.wall_s - baseline.wall_s) / ideal:.2f}x)"
            )
            target = verdict(run.requests == expected and run.judge_scored == plan.e2e_cases)
        else:
            share = run.wall_s / uncached.wall_s
            ideal_cell = "0 s"
            ratio_cell = f"{share:.3f} of uncached"
            target = verdict(run.requests == 0 and share < CACHED_TARGET)
        cli_rows.append(
            [
                run.label,
                count(run.requests),
                seconds(run.wall_s),
                ideal_cell,
                ratio_cell,
                count(run.judge_scored),
                run.status,
                target,
            ]
        )
    cli_notes = [
        f"`ragproof run --json` on {count(plan.e2e_cases)} recorded qa cases, "
        f"{JUDGE_CALLS_PER_QA_CASE} judge questions each (expected {count(expected)} requests), "
        f"`run.concurrency = {concurrency}` in ragproof.toml, judge set by `RAGPROOF_JUDGE_MODEL="
        f"{JUDGE_MODEL}`, `RAGPROOF_JUDGE_API_BASE`, `OPENAI_API_KEY=dummy`; fresh "
        "`RAGPROOF_STORE` and `DAGSTER_HOME`. Requests are the server's own count.",
        "Wall includes the command's startup (Python, Dagster, LiteLLM imports) and the store "
        "writes; 'judging alone' subtracts the no-judge baseline on the same dataset.",
        f"Targets: the uncached run makes exactly the expected requests and scores every case; "
        f"the cached re-run makes 0 requests in under {CACHED_TARGET:g} of the uncached wall time.",
    ]
    if quick:
        cli_notes.append("QUICK MODE: short latency and few cases; not a measurement.")
    cli = Table(
        "Judge end to end: `ragproof run` with the judge, then a cached re-run",
        [
            "run",
            "server requests",
            "wall",
            "ideal",
            "wall / ideal",
            "groundedness scored",
            "status",
            "target",
        ],
        cli_rows,
        cli_notes,
    )
    return [direct, cli]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("Benchmarks 3 and 4: judge throughput, uncached and cached.", argv)
    plan = QUICK if args.quick else FULL
    WORK.mkdir(parents=True, exist_ok=True)
    with JudgeProcess(plan.latency_s) as server:
        bursts = []
        for i, concurrency in enumerate(plan.concurrencies):
            burst = ask_burst(server, plan.calls, concurrency, offset=i * plan.calls)
            bursts.append(burst)
            print(
                f"ask x {burst.calls} at concurrency {concurrency}: {burst.wall_s:.2f} s",
                flush=True,
            )
        runs, expected = cli_runs(server, plan)
    publish(tables(plan, bursts, runs, expected, args.quick), args.emit)


if __name__ == "__main__":
    main()
