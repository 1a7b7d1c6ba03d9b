"""Repeated trials against as many single cases (issue 46, CONTRACT section 27).

``ragproof run --repeats 5`` on 10,000 cases beside ``ragproof run`` on 50,000 cases of
the same size: both ask a free in-process pipeline (``benchmarks/_trials_adapter.py``)
50,000 times and score 50,000 trials with the four retrieval metrics and
``echo.exact_match``; the first also groups them into per-case statistics (the repeats
view, ICC, pass@k, the cluster bootstrap). Each command a fresh child process on a
fresh store and Dagster home, one shard; wall and peak RSS of the command, the two
alternated in each of ``--rounds`` rounds. Target: the repeats run at most 1.2x the
single cases' wall and peak memory.

``python -m benchmarks.repeats [--cases N] [--rounds N] [--quick]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import (
    RAGPROOF,
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    measure_json_command,
    publish,
    seconds,
    verdict,
)

BENCHMARK = Benchmark(
    title="Repeated trials against as many single cases",
    measures=(
        "`ragproof run --repeats 5` on 10,000 cases beside `ragproof run` on 50,000 cases of "
        "the same size (a free in-process pipeline whose answers change between calls, the "
        "four retrieval metrics and `echo.exact_match`, one shard, fresh store and Dagster "
        "home); wall and peak RSS of each command, alternated in each of `--rounds` rounds."
    ),
    target="repeats run <= 1.2x the single cases' wall and peak memory",
    order=140,
)

TRIALS = 5
TARGET = 1.2
METRICS = (
    "retrieval.precision_at_k,retrieval.recall_at_k,retrieval.mrr,retrieval.ndcg_at_k,"
    "echo.exact_match"
)


def write_cases(folder: Path, n: int) -> Path:
    """``n`` cases of one shape: a question, 2 expected sources, an expected answer."""
    path = folder / f"cases-{n}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            case = {
                "id": f"c{i:06d}",
                "question": f"question {i}?",
                "expected_source_ids": [f"d{i % 997}", f"d{(i + 3) % 997}"],
                "expected_answer": "answer 1",
            }
            out.write(json.dumps(case) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases of the repeats run")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="500 cases")
    parser.add_argument("--emit", type=Path)
    args = parser.parse_args(argv)
    n = 500 if args.quick else args.cases
    WORK.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="repeats-", dir=WORK))
    config = home / "ragproof.toml"
    config.write_text(
        "[run]\nconcurrency = 16\n\n[adapter]\n"
        'target = "benchmarks._trials_adapter:TrialAdapter"\n',
        encoding="utf-8",
    )
    repeated, single = write_cases(home, n), write_cases(home, n * TRIALS)

    def command(name: str, dataset: Path, *extra: str) -> dict:
        env = clean_env(
            RAGPROOF_STORE=str(home / name / "store"), DAGSTER_HOME=str(home / name / "dagster")
        )
        (home / name / "dagster").mkdir(parents=True)
        cmd = [RAGPROOF, "run", "--dataset", str(dataset), "--config", str(config)]
        return measure_json_command([*cmd, "--metrics", METRICS, *extra, "--json"], env, REPO)

    rounds: list[tuple[dict, dict]] = []
    try:
        for number in range(1, args.rounds + 1):
            repeats_first = number % 2 == 1  # which goes first alternates
            if repeats_first:
                trials = command(f"repeats-{number}", repeated, "--repeats", str(TRIALS))
            plain = command(f"single-{number}", single)
            if not repeats_first:
                trials = command(f"repeats-{number}", repeated, "--repeats", str(TRIALS))
            assert trials["out"]["adapter_calls"] == plain["out"]["adapter_calls"]
            rounds.append((trials, plain))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    walls = [t["wall_s"] / p["wall_s"] for t, p in rounds]
    memory = [t["rss_mb"] / p["rss_mb"] for t, p in rounds]
    wall_ratio, memory_ratio = statistics.median(walls), statistics.median(memory)
    rows = []
    for number, (t, p) in enumerate(rounds, 1):
        rows.append(
            [
                str(number),
                f"{seconds(t['wall_s'])} / {t['rss_mb']:.0f} MB",
                f"{seconds(p['wall_s'])} / {p['rss_mb']:.0f} MB",
                f"{t['wall_s'] / p['wall_s']:.2f}x",
                f"{t['rss_mb'] / p['rss_mb']:.2f}x",
                f"{t['load']:.2f} / {p['load']:.2f}",
            ]
        )
    rows.append(["median", "-", "-", f"{wall_ratio:.2f}x", f"{memory_ratio:.2f}x", "-"])
    met = wall_ratio <= TARGET and memory_ratio <= TARGET
    table = Table(
        f"Repeated trials: {count(n)} cases x {TRIALS} trials against {count(n * TRIALS)} "
        f"single cases, {len(rounds)} round(s)",
        [
            "round",
            f"{count(n)} x {TRIALS} trials: wall / peak RSS",
            f"{count(n * TRIALS)} cases: wall / peak RSS",
            "wall ratio",
            "memory ratio",
            "1-min load before (repeats / single)",
        ],
        rows,
        [
            "Both sides call the pipeline and score the same number of times (checked: equal "
            "adapter_calls); the repeats run also groups its trials per case (the repeats "
            "view, within and between sd, ICC, pass@k, the cluster bootstrap of "
            "2,000 resamples). Peak RSS is the command's largest process.",
        ],
    )
    target = Table(
        "Repeated trials: target",
        ["target", "wall ratio", "memory ratio", "verdict"],
        [
            [
                f"repeats run <= {TARGET}x the single cases' wall and peak memory",
                f"{wall_ratio:.2f}x",
                f"{memory_ratio:.2f}x",
                verdict(met),
            ]
        ],
    )
    publish(
        [table, target],
        args.emit,
        headline=f"{count(n)} x {TRIALS} trials at {wall_ratio:.2f}x the wall, "
        f"{memory_ratio:.2f}x the memory of {count(n * TRIALS)} cases",
    )


if __name__ == "__main__":
    main()
