"""Input work of a recorded run, done once: what the dataset step pays to read and
validate the dataset and the recording and store them as the run's ``dataset`` and
``recorded_outputs`` tables (store/dataset_table.py, store/recording.py), each by
its fast path (pyarrow's JSON reader) and by its exact path (the line-by-line
validator: what every dataset paid before the dataset's fast path existed, and
what a file the fast path refuses still pays).

In one process, each with its wall and CPU seconds (CPU counts pyarrow's threads:
on a loaded machine it moves less than the wall). With ``--run-shards N``, also the
real ``ragproof run --shards N`` on the same files (benchmarks/shards_store.py's
measurement): wall, seconds per Dagster step, the largest processes' peak RSS and
the load. With ``--conversations N``, the same input work for N recorded
conversations of five turns (``benchmarks.conversations``' data) beside the same
turns as single cases, each path in a fresh process (its peak RSS its own).

``python -m benchmarks.ingest_recording [--cases N] [--run-shards N] [--conversations N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from benchmarks._common import PYTHON, WORK, Benchmark, Table, count, publish, run_measured, seconds
from benchmarks._synthetic import write_recorded_run
from ragproof_core.store import RunStore
from ragproof_core.store.dataset_table import staged_dataset
from ragproof_core.store.recording import staged_recording

BENCHMARK = Benchmark(
    title="A recorded run's input work",
    measures=(
        "What the dataset step pays to read and validate the dataset and the recording "
        "and store them as the run's `dataset` and `recorded_outputs` tables, each by its "
        "fast path (pyarrow's JSON reader) and by its exact path (the line-by-line "
        "validator), in one process, wall and CPU."
    ),
    target="-",
    order=170,
    in_run_all=False,
)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _in_process(dataset: Path, outputs: Path) -> list[list[str]]:
    root = tempfile.mkdtemp(prefix="ingest-", dir=WORK)
    try:
        return _stored_both_ways(RunStore(root), dataset, outputs)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stored_both_ways(store: RunStore, dataset: Path, outputs: Path) -> list[list[str]]:
    rows = []
    store.write_manifest("bench", {})
    for fast in (True, False):
        with _timed(rows, "dataset: {path}, stored") as named:
            staged = staged_dataset(dataset, fast=fast)
            store.write_staged_dataset("bench", staged)
            named["path"] = _path_name(staged.fast)
    for fast in (True, False):
        with (
            _timed(rows, "recording: {path}, stored") as named,
            staged_recording(str(outputs), "bench", fast=fast) as recording,
        ):
            store.write_recording_beside("bench", recording, staged.case_ids(), staged.turn_cases())
            named["path"] = _path_name(recording.fast)
    dataset_s, recording_s = rows[0], rows[2]
    rows.append(
        [
            "both, fast paths (the dataset step's input work)",
            seconds(dataset_s[1] + recording_s[1]),
            seconds(dataset_s[2] + recording_s[2]),
            max(dataset_s[3], recording_s[3]),
        ]
    )
    return [
        [what, took if isinstance(took, str) else seconds(took), cpu if isinstance(cpu, str)
         else seconds(cpu), f"{load:.1f}"]
        for what, took, cpu, load in rows
    ]  # fmt: skip


def _path_name(fast: bool) -> str:
    return "fast path (pyarrow JSON reader)" if fast else "exact path (line validator)"


@contextmanager
def _timed(rows: list, label: str) -> Iterator[dict[str, str]]:
    """Appends ``[label, wall s, CPU s, load]``; ``label`` filled from the yielded dict."""
    named: dict[str, str] = {}
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    yield named
    rows.append(
        [label.format(**named), time.perf_counter() - wall, time.process_time() - cpu, load]
    )


def _stage_once(dataset: Path, outputs: Path, fast: bool) -> None:
    """The dataset step's input work once, in this process (a child of ``_in_child``):
    prints its wall and CPU seconds and which paths read the files, as JSON."""
    root = tempfile.mkdtemp(prefix="ingest-", dir=WORK)
    try:
        store = RunStore(root)
        store.write_manifest("bench", {})
        wall, cpu = time.perf_counter(), time.process_time()
        staged = staged_dataset(dataset, fast=fast)
        store.write_staged_dataset("bench", staged)
        with staged_recording(str(outputs), "bench", fast=fast) as recording:
            store.write_recording_beside("bench", recording, staged.case_ids(), staged.turn_cases())
        took = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
        print(json.dumps({**took, "fast": [staged.fast, recording.fast]}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _in_child(dataset: Path, outputs: Path, *, fast: bool) -> list[str]:
    """``_stage_once`` in a fresh process: its work's seconds, the process's peak RSS."""
    load = os.getloadavg()[0]
    cmd = [PYTHON, "-m", "benchmarks.ingest_recording", "--stage", str(dataset), str(outputs)]
    child = run_measured([*cmd, *([] if fast else ["--exact"])], dict(os.environ), WORK, 3600)
    if child.returncode != 0:
        raise RuntimeError(f"staging {dataset} failed:\n{child.stderr[-3000:]}")
    found = json.loads(child.stdout)
    paths = "fast" if all(found["fast"]) else "exact" if not any(found["fast"]) else "mixed"
    return [
        paths,
        seconds(found["wall_s"]),
        seconds(found["cpu_s"]),
        f"{child.max_rss_mib * 2**20 / 1e6:,.0f} MB",
        f"{load:.1f}",
    ]


def _files(folder: Path) -> tuple[Path, Path]:
    return folder / "cases.jsonl", folder / "outputs.jsonl"


def _conversations(conversations: int) -> Table:
    from benchmarks.conversations import TURNS, write_pair

    turns = count(conversations * TURNS)
    conversation_label = f"{count(conversations)} conversations of {TURNS} turns"
    work = Path(tempfile.mkdtemp(prefix="conversations-", dir=WORK))
    try:
        single, multi = write_pair(work, conversations)
        rows = [
            [f"{turns} single cases", *_in_child(*_files(single), fast=True)],
            [conversation_label, *_in_child(*_files(multi), fast=True)],
            [conversation_label, *_in_child(*_files(multi), fast=False)],
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Table(
        f"Input work of recorded conversations ({count(conversations)} of {TURNS} turns) beside "
        f"the same {turns} turns as single cases, each in a fresh process",
        ["input", "path", "seconds", "CPU seconds", "peak RSS of the process", "load (1 min)"],
        rows,
        [
            "Seconds: reading, validating and storing the dataset and the recording "
            "(`staged_dataset`, `staged_recording`, the run store's writes); peak RSS: the "
            "whole process, imports included. The exact path is what a conversation "
            "dataset and recording paid before their fast path."
        ],
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--run-shards", type=int, help="also time `ragproof run --shards N`")
    parser.add_argument("--run-only", action="store_true", help="only the command")
    parser.add_argument(
        "--conversations", type=int, help="also N recorded conversations (fresh processes)"
    )
    parser.add_argument("--quick", action="store_true", help="2,000 cases")
    parser.add_argument("--emit", type=Path, help="also write the tables as JSON here (run_all)")
    parser.add_argument("--stage", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--exact", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:
        _stage_once(*args.stage, fast=not args.exact)
        return
    if args.quick:
        args.cases = 2_000
    recorded = write_recorded_run(WORK / f"shards-{args.cases}", args.cases)
    tables = []
    if not args.run_only:
        tables.append(
            Table(
                f"Input work of a recorded run, {count(args.cases)} cases "
                f"({recorded.megabytes:,.0f} MB of dataset and recording), one process",
                ["step", "seconds", "CPU seconds", "load (1 min)"],
                _in_process(recorded.dataset, recorded.outputs),
                [f"peak RSS of the process after all four: {_peak_mb():,.0f} MB"],
            )
        )
    if args.run_shards:
        from benchmarks.shards_store import run_once

        m = run_once(recorded, args.run_shards, "local", {})
        tables.append(
            Table(
                f"`ragproof run --shards {args.run_shards}`, {count(args.cases)} recorded cases",
                ["wall", "steps (s)", "largest processes' peak RSS (MB)", "load before / after"],
                [
                    [
                        seconds(m["wall_s"]),
                        ", ".join(f"{k} {v:.1f}" for k, v in m["steps"].items()),
                        ", ".join(f"{mb:,.0f}" for mb in m["rss_each_mb"]),
                        f"{m['load'][0]:.1f} / {m['load'][1]:.1f}",
                    ]
                ],
            )
        )
    if args.conversations:
        tables.append(_conversations(args.conversations))
    publish(tables, args.emit)


if __name__ == "__main__":
    main()
