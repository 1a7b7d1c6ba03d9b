"""Conversations against single cases (issue 21): 10,000 recorded conversations of five
turns beside the same 50,000 turns as single cases.

Both datasets hold the same questions, gold ids and recorded outputs (ten retrieved
chunks and a cited answer per turn); the conversation run additionally validates the
conversation lines, keeps conversations whole in batches, replays each conversation's
turns in order (a turn after a failed one fails: ``run.turn_replay``, on columns) and
scores ``conversation.knowledge_retention`` (skipped: no judge) once per conversation. Each
run is ``ragproof run --json`` without a judge in a fresh child process with a fresh
store, timed from its start. Target: the conversations within 1.3x of the single
cases' wall time and peak memory. The 1-minute load is printed beside each figure.

``python -m benchmarks.conversations [--quick]``
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import (
    RAGPROOF,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    measure_json_command,
    parse_args,
    publish,
    seconds,
    verdict,
)
from benchmarks._synthetic import sentence

BENCHMARK = Benchmark(
    title="Conversations",
    measures=(
        "`ragproof run --json` (no judge, fresh child and store) on 10,000 recorded "
        "conversations of 5 turns beside the same 50,000 turns as single cases: wall, "
        "CPU, peak RSS. `--quick` is 400 conversations."
    ),
    target="conversations within 1.3x of the single cases",
    order=100,
)

TURNS = 5
TARGET_RATIO = 1.3
CONFIG = (
    "[run]\nk = 5\nconcurrency = 16\n\n[adapter]\n"
    'target = "ragproof_core.adapters.recorded:RecordedAdapter"\n'
    'options = { path = "outputs.jsonl" }\n'
)


def write_pair(folder: Path, conversations: int, seed: int = 21) -> tuple[Path, Path]:
    """Two folders (``single``, ``conversations``), each with cases.jsonl, outputs.jsonl
    and ragproof.toml, holding the same turns."""
    rng = random.Random(seed)
    chunk_ids = [f"doc{i:05d}#{i % 4}" for i in range(20_000)]
    texts = {cid: sentence(random.Random(cid), 32) for cid in chunk_ids}
    single, multi = folder / "single", folder / "conversations"
    for path in (single, multi):
        path.mkdir(parents=True, exist_ok=True)
        (path / "ragproof.toml").write_text(CONFIG, encoding="utf-8")
    with (
        (single / "cases.jsonl").open("w", encoding="utf-8") as single_cases,
        (single / "outputs.jsonl").open("w", encoding="utf-8") as single_outputs,
        (multi / "cases.jsonl").open("w", encoding="utf-8") as multi_cases,
        (multi / "outputs.jsonl").open("w", encoding="utf-8") as multi_outputs,
    ):
        for c in range(conversations):
            turns, recorded = [], []
            for t in range(1, TURNS + 1):
                picks = rng.sample(chunk_ids, 6)
                turn = {
                    "question": sentence(rng, 12)[:-1] + "?",
                    "expected_source_ids": picks[:2],
                    "expected_answer": sentence(rng, 10),
                }
                ranked = rng.choices(picks, k=10)
                line = {
                    "retrieve": [
                        {"id": cid, "text": texts[cid], "score": 1.0 - j / 10}
                        for j, cid in enumerate(ranked)
                    ],
                    "answer": {"text": sentence(rng, 20), "citations": ranked[:2]},
                }
                turns.append(turn)
                recorded.append(line)
                case_id = f"s{c:06d}-{t}"
                single_cases.write(json.dumps({"id": case_id, **turn}) + "\n")
                single_outputs.write(json.dumps({"case_id": case_id, **line}) + "\n")
            conversation_id = f"c{c:06d}"
            multi_cases.write(
                json.dumps({"id": conversation_id, "kind": "conversation", "turns": turns}) + "\n"
            )
            multi_outputs.write(json.dumps({"case_id": conversation_id, "turns": recorded}) + "\n")
    return single, multi


def measure(folder: Path, home: Path) -> dict:
    env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster"))
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    cmd = [RAGPROOF, "run", "--dataset", "cases.jsonl", "--config", "ragproof.toml", "--json"]
    return measure_json_command(cmd, env, folder)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    conversations = 400 if args.quick else 10_000
    work = Path(tempfile.mkdtemp(prefix="conversations-", dir=WORK if WORK.exists() else None))
    try:
        single, multi = write_pair(work / "data", conversations)
        results = {
            "single": measure(single, work / "single-home"),
            "conversations": measure(multi, work / "multi-home"),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    one, many = results["single"], results["conversations"]
    wall_ratio = many["wall_s"] / one["wall_s"]
    rss_ratio = many["rss_mb"] / one["rss_mb"]
    recall = "retrieval.recall_at_k"
    same = one["out"]["metrics"][recall] == many["out"]["metrics"][recall]
    rows = [
        [label, seconds(m["wall_s"]), seconds(m["cpu_s"]), f"{m['rss_mb']:,.0f} MB",
         f"{m['load']:.2f}"]
        for label, m in (
            (f"{count(conversations * TURNS)} single cases", one),
            (f"{count(conversations)} conversations of {TURNS} turns", many),
        )
    ]  # fmt: skip
    table = Table(
        f"Conversations: {count(conversations)} recorded conversations of {TURNS} turns "
        f"beside {count(conversations * TURNS)} single cases, no judge",
        ["run", "wall", "CPU", "peak RSS", "1-min load before"],
        rows,
        [
            f"Wall: {wall_ratio:.2f}x the single cases (target <= {TARGET_RATIO:g}x): "
            f"{verdict(wall_ratio <= TARGET_RATIO)}. Peak memory: {rss_ratio:.2f}x "
            f"(target <= {TARGET_RATIO:g}x): {verdict(rss_ratio <= TARGET_RATIO)}.",
            f"Per-turn retrieval equals the single cases' ({recall} summary identical: {same}).",
            "Each figure is `ragproof run --json` in a fresh child process and store, "
            "start-up included; peak RSS is the command's own largest process.",
        ],
    )
    publish([table], args.emit)


if __name__ == "__main__":
    sys.exit(main())
