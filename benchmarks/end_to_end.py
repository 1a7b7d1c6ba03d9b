"""Benchmark 2: ``ragproof run`` end to end on recorded outputs, no judge.

The real command in a child process, with a fresh ``RAGPROOF_STORE`` and
``DAGSTER_HOME``, on a generated dataset and a ``RecordedAdapter`` outputs file
(mixed case kinds, 10 retrieved chunks of about 200 characters per case, a few
recorded failures): wall seconds, cases per second and the command's peak
resident memory, measured by ``benchmarks._measure`` around the command alone.

``python -m benchmarks.end_to_end [--quick]``.
"""

from __future__ import annotations

import json
import shutil
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
    parse_args,
    publish,
    run_measured,
    seconds,
    verdict,
)
from benchmarks._synthetic import RecordedRun, write_recorded_run

BENCHMARK = Benchmark(
    title="End to end",
    measures=(
        "`ragproof run` (the real command in a child process, fresh store and Dagster "
        "home) on 10,000 and 100,000 recorded cases, no judge: wall, cases/s, CPU, peak "
        "RSS."
    ),
    target="100,000 cases < 60 s, peak < 1.5 GB",
    order=20,
)

FULL_SIZES = (10_000, 100_000)
QUICK_SIZES = (500, 2_000)
TARGET_CASES = 100_000
TARGET_WALL_S = 60.0
TARGET_RSS_MB = 1500.0


def run_once(recorded: RecordedRun) -> dict:
    home = Path(tempfile.mkdtemp(prefix="e2e-", dir=WORK))
    try:
        env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster"))
        cmd = recorded.run_command()
        child = run_measured(cmd, env, REPO, timeout=900)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if child.returncode != 0:
        raise RuntimeError(f"ragproof run failed ({child.returncode}):\n{child.stderr[-3000:]}")
    summary = json.loads(child.stdout)
    precision = summary["metrics"]["retrieval.precision_at_k"]
    return {
        "cases": recorded.cases,
        "megabytes": recorded.megabytes,
        "wall_s": child.wall_s,
        "cpu_s": child.cpu_s,
        "rss_mb": child.max_rss_mib * 2**20 / 1e6,
        "status": summary["status"],
        "retrieval_scored": precision["scored"],
        "expected_retrieval_scored": recorded.retrieval_scored,
        "errored": precision["errored"],
        "expected_errored": recorded.failures,
    }


def tables(measured: list[dict], quick: bool) -> list[Table]:
    rows = []
    for m in measured:
        correct = (
            m["status"] == "completed"
            and m["retrieval_scored"] == m["expected_retrieval_scored"]
            and m["errored"] == m["expected_errored"]
        )
        if m["cases"] == TARGET_CASES:
            target = verdict(m["wall_s"] < TARGET_WALL_S and m["rss_mb"] < TARGET_RSS_MB)
        else:
            target = "-"
        rows.append(
            [
                count(m["cases"]),
                f"{m['megabytes']:.0f} MB",
                seconds(m["wall_s"]),
                f"{m['cases'] / m['wall_s']:,.0f}",
                seconds(m["cpu_s"]),
                f"{m['rss_mb']:,.0f} MB",
                f"{count(m['retrieval_scored'])} scored, {count(m['errored'])} failures "
                + ("(as expected)" if correct else "(**UNEXPECTED**)"),
                target,
            ]
        )
    notes = [
        f"Target: {count(TARGET_CASES)} cases in under {TARGET_WALL_S:g} s with peak memory "
        f"under {TARGET_RSS_MB:,.0f} MB (1.5 GB).",
        "`ragproof run --dataset cases.jsonl --config ragproof.toml --json`, recorded adapter, "
        "no judge (judge metrics skip; refusal metrics use the heuristic), fresh store and "
        "Dagster home per run. Input = dataset + recorded outputs file.",
        "Cases: 90% qa, 5% unanswerable, 5% injection; 0.5% recorded failures; 2% without "
        "`retrieve`. Wall, CPU (user + system) and peak RSS are the command's own, from "
        "`benchmarks/_measure.py` (`RUSAGE_CHILDREN` of a one-child wrapper).",
    ]
    if quick:
        notes.append("QUICK MODE: small sizes; not a measurement.")
    return [
        Table(
            "End to end: `ragproof run` on recorded outputs, no judge",
            [
                "cases",
                "input",
                "wall",
                "cases/s",
                "CPU",
                "peak RSS",
                "retrieval.precision_at_k",
                "target",
            ],
            rows,
            notes,
        )
    ]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args("Benchmark 2: ragproof run end to end on recorded outputs.", argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    measured = []
    for n in sizes:
        recorded = write_recorded_run(WORK / f"e2e-{n}", n)
        measured.append(run_once(recorded))
    publish(tables(measured, args.quick), args.emit)


if __name__ == "__main__":
    main()
