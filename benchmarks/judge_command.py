"""The judged command against its own library loop (issue 24, item 5).

The same 200 recorded qa cases, judged for ``generation.groundedness`` only, 16
requests in flight, against the test suite's judge server in its own process
(1 s per reply, no judge cache), each run in a fresh child process and timed
from its start (imports included):

1. ``ragproof run --metrics generation.groundedness --json`` (the CLI, Dagster,
   the store, the report) on a fresh store and Dagster home (the first run on
   a machine, which also creates Dagster's SQLite tables), and again on the
   same home (every later run);
2. the library loop: ``load_dataset``, the ``RecordedAdapter``, a
   ``LiteLLMJudge`` and ``run.evaluate`` with the same settings, in one plain
   Python process that stores nothing;
3. RAGAS's ``faithfulness`` over the same cases and server (``benchmarks/_ragas.py``;
   the server answers RAGAS's own prompts in its JSON formats: two requests a
   case, statements then verdicts). ``ragas`` is not a dependency of ragproof
   and pins openai and LangChain versions of its own: the child runs in
   ``$RAGAS_PYTHON``, else this interpreter when ``ragas`` imports in it, else
   ``benchmarks/.work/ragas-venv/bin/python`` when that exists (see
   docs/benchmarks.md); without any of them the row says so.

Wall and CPU (user + system) are the child's own (``benchmarks/_measure.py``);
the ideal is 200 x 1 s / 16 = 12.5 s for ragproof (one request a case) and
25 s for RAGAS (two). Target: the command within 1.2x of the library loop's
wall (the fresh-home run is the one held to it).

``python -m benchmarks.judge_command [--quick]``; ``--library`` is the child
that runs the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import (
    PYTHON,
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    publish,
    run_measured,
    seconds,
    verdict,
)
from benchmarks._synthetic import write_recorded_run
from benchmarks.judge_throughput import JudgeProcess

BENCHMARK = Benchmark(
    title="The judged command against its library loop",
    measures=(
        "`ragproof run --metrics generation.groundedness --no-cache` on 200 recorded qa "
        "cases, 16 in flight, 1 s judge latency (the judge server in its own process), "
        "against the same loop as a library (`load_dataset`, `RecordedAdapter`, "
        "`LiteLLMJudge`, `evaluate`) in a fresh process; RAGAS beside when installed."
    ),
    target="command <= 1.2x the library loop",
    order=70,
)

JUDGE_MODEL = "openai/judge-test"
METRIC = "generation.groundedness"
CASES, QUICK_CASES = 200, 20
CONCURRENCY = 16
LATENCY_S, QUICK_LATENCY_S = 1.0, 0.2
TARGET_RATIO = 1.2
RAGAS_VENV_PYTHON = WORK / "ragas-venv" / "bin" / "python"
COMMAND_FRESH = "`ragproof run --metrics generation.groundedness`, fresh Dagster home"
COMMAND_AGAIN = "the same command again, same Dagster home"
LIBRARY = "library loop (`evaluate()` with a `LiteLLMJudge`)"
RAGAS = "RAGAS `faithfulness` (`ragas.evaluate`, 16 workers)"


def library_loop(dataset: str, outputs: str) -> dict:
    """The judge loop as a library user writes it; prints what it scored as JSON."""
    from ragproof_core.adapters.recorded import RecordedAdapter
    from ragproof_core.config.settings import RunSettings
    from ragproof_core.data.dataset import load_dataset
    from ragproof_core.judge.client import flush_litellm
    from ragproof_core.judge.session import LiteLLMJudge
    from ragproof_core.judge.settings import JudgeEnv
    from ragproof_core.run.evaluate import evaluate

    started = time.perf_counter()
    cases = load_dataset(dataset)
    settings = RunSettings(k=5, concurrency=CONCURRENCY, metrics=(METRIC,))
    judge = LiteLLMJudge(
        JudgeEnv(model=JUDGE_MODEL, api_base=os.environ["RAGPROOF_JUDGE_API_BASE"]),
        cache=None,
        use_cache=False,
        concurrency=CONCURRENCY,
    )

    async def run():
        try:
            return await evaluate(cases, RecordedAdapter(outputs), settings, judge)
        finally:
            await flush_litellm()

    evaluation = asyncio.run(run())
    scored = sum(1 for r in evaluation.results if r.metric == METRIC and r.status == "scored")
    return {"scored": scored, "loop_s": time.perf_counter() - started}


def ragas_python() -> str | None:
    """An interpreter in which ``ragas`` imports, or None."""
    candidates = [os.environ.get("RAGAS_PYTHON"), PYTHON, str(RAGAS_VENV_PYTHON)]
    for python in filter(None, candidates):
        if not Path(python).exists():
            continue
        probe = subprocess.run([python, "-c", "import ragas"], capture_output=True, timeout=300)
        if probe.returncode == 0:
            return python
    return None


def _child(cmd: list[str], env: dict[str, str]) -> tuple[float, float, dict]:
    child = run_measured(cmd, env, REPO, timeout=900)
    if child.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({child.returncode}):\n{child.stderr[-3000:]}")
    return child.wall_s, child.cpu_s, json.loads(child.stdout)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--emit", type=Path)
    parser.add_argument("--library", nargs=2, metavar=("DATASET", "OUTPUTS"))
    args = parser.parse_args(argv)
    if args.library:
        print(json.dumps(library_loop(*args.library)))
        return
    n = QUICK_CASES if args.quick else CASES
    latency = QUICK_LATENCY_S if args.quick else LATENCY_S
    recorded = write_recorded_run(
        WORK / f"judge-command-{n}", n, qa_only=True, concurrency=CONCURRENCY
    )
    home = Path(tempfile.mkdtemp(prefix="judge-command-", dir=WORK))
    ragas = ragas_python()
    command = [*recorded.run_command("--metrics", METRIC, "--no-cache")]
    library = [PYTHON, "-m", "benchmarks.judge_command", "--library",
               str(recorded.dataset), str(recorded.outputs)]  # fmt: skip
    variants = [
        (COMMAND_FRESH, command),
        (LIBRARY, library),
        (COMMAND_AGAIN, command),
    ]
    if ragas is not None:
        ragas_cmd = [ragas, "-m", "benchmarks._ragas", str(recorded.dataset), str(recorded.outputs)]
        variants.append((RAGAS, ragas_cmd))
    rows, walls = [], {}
    try:
        with JudgeProcess(latency) as server:
            env = clean_env(
                RAGPROOF_STORE=str(home / "store"),
                DAGSTER_HOME=str(home / "dagster"),
                RAGPROOF_JUDGE_MODEL=JUDGE_MODEL,
                RAGPROOF_JUDGE_API_BASE=server.url,
                OPENAI_API_KEY="dummy",
                # RAGAS's usage telemetry: nothing leaves the machine.
                RAGAS_DO_NOT_TRACK="true",
            )
            for label, cmd in variants:
                load = os.getloadavg()[0]
                before = server.count()
                wall, cpu, out = _child(cmd, env)
                requests = server.count() - before
                scored = out["metrics"][METRIC]["scored"] if "metrics" in out else out["scored"]
                walls[label] = wall
                loop = f" (loop {seconds(out['loop_s'])})" if "loop_s" in out else ""
                rows.append(
                    [label, seconds(wall) + loop, seconds(cpu), count(requests), count(scored),
                     f"{load:.2f}"]
                )  # fmt: skip
                print(f"{label}: {wall:.2f} s, CPU {cpu:.2f} s, load {load:.2f}", flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if ragas is None:
        rows.append([RAGAS, "not measured: no interpreter imports ragas", "-", "-", "-", "-"])
    ratio = walls[COMMAND_FRESH] / walls[LIBRARY]
    notes = [
        f"Command / library loop: {ratio:.2f}x on a fresh Dagster home, "
        f"{walls[COMMAND_AGAIN] / walls[LIBRARY]:.2f}x on the same home again "
        f"(target <= {TARGET_RATIO:g}x): {verdict(ratio <= TARGET_RATIO)}. Ideal: "
        f"{count(n)} x {latency:g} s / {CONCURRENCY} = {seconds(n * latency / CONCURRENCY)} "
        f"(RAGAS asks twice a case: {seconds(2 * n * latency / CONCURRENCY)}).",
    ]
    if RAGAS in walls:
        notes.append(
            f"Command / RAGAS faithfulness: {walls[COMMAND_FRESH] / walls[RAGAS]:.2f}x "
            f"(fresh home), {walls[COMMAND_AGAIN] / walls[RAGAS]:.2f}x (same home again)."
        )
    notes += [
        "Each a fresh child process timed from its start (imports included); CPU is its "
        "user + system. The command uses `--no-cache`; the library loop and RAGAS store "
        "nothing. The judge server runs in its own process.",
        "The machine is shared with other engineers' sessions: the load is beside each figure.",
    ]
    table = Table(
        f"Judged command vs its library loop and RAGAS: {count(n)} qa cases, `{METRIC}` "
        f"(RAGAS: `faithfulness`), {CONCURRENCY} in flight, {latency:g} s judge latency",
        ["run", "wall", "CPU", "server requests", "scored", "1-min load before"],
        rows,
        notes,
    )
    publish([table], args.emit)


if __name__ == "__main__":
    sys.exit(main())
