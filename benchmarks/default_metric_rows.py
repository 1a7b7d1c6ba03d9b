"""What a shard pays per case for the default metrics' rows, without a judge.

``python -m benchmarks.default_metric_rows [--cases N] [--quick]``

Times, in this process (CPU time, best of three), the code a shard step runs on
a batch of recorded cases once their outputs are replayed: ``evaluate`` with
every default metric and no judge (22 rows a case), and the encoding of its
outputs and result rows into the store's Arrow tables, two ways:

- **as objects**: one ``MetricResult`` a row, sorted per case, then encoded
  (``schema.encode_case_results``): the path of a run with a judge, and of every
  run before the default metrics declared ``score_columns``;
- **from columns**: ``evaluate(..., as_columns=True)``: each metric's rows from
  the dataset's and the outputs' Arrow columns (``metrics/result_grid.py``).

The replay itself (parsing the recording) is left out on purpose: it is the same
for both and is measured with the store's recorded outputs elsewhere. The
outputs are parsed once and handed back by an adapter that shares the event
loop, so what is timed is the runner's loop, the metrics, the rows and their
encoding. Both ways' rows are checked equal. Data: the 100,000-case recording
of ``benchmarks/shards_store.py`` (``benchmarks/.work/shards-100000``). A
figure, not a test: it asserts only that both ways agree.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import itertools
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._common import WORK, Benchmark, Table, publish
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.adapters.runner import run_adapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.model import Case, CaseOutput
from ragproof_core.run.evaluate import evaluate
from ragproof_core.store import schema

BENCHMARK = Benchmark(
    title="The default metrics' rows without a judge",
    measures=(
        "In one process, CPU time (best of three) of what a shard step runs on a batch of "
        "20,000 recorded cases once their outputs are replayed: `evaluate` with every "
        "default metric and no judge (22 rows a case) and the encoding of its rows into "
        "the store's Arrow tables, as objects (one `MetricResult` a row) and from columns "
        "(`evaluate(..., as_columns=True)`)."
    ),
    target="-",
    order=55,
    in_run_all=False,
)

DATA = WORK / "shards-100000"
REPEATS = 3


class Replayed:
    """Hands back outputs parsed beforehand, as the recorded adapter replays them."""

    shares_event_loop = True
    free_to_call = True
    reports_latency = True

    def __init__(self, outputs: list[CaseOutput]) -> None:
        self._by_id = {output.case_id: output for output in outputs}

    async def run_case(self, case: Case) -> CaseOutput:
        return self._by_id[case.id]

    def answer(self, question: str) -> None: ...


def best_cpu(work: Callable[[], object]) -> tuple[float, object]:
    """The least CPU time of ``REPEATS`` runs of ``work`` (collector off, as in a shard)."""
    best, result = float("inf"), None
    for _ in range(REPEATS):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            result = work()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000, help="cases a batch (a shard's)")
    parser.add_argument("--quick", action="store_true", help="2,000 cases: checks the script")
    parser.add_argument("--emit", type=Path, help="also write the tables as JSON here (run_all)")
    args = parser.parse_args(argv)
    n = 2_000 if args.quick else args.cases
    cases = list(itertools.islice(load_dataset(DATA / "cases.jsonl"), n))
    replay = RecordedAdapter.prechecked(str(DATA / "outputs.jsonl"))
    settings = RunSettings(k=5, concurrency=8)
    runner = asyncio.Runner()
    outputs = runner.run(run_adapter(cases, replay, settings))
    adapter = Replayed(outputs)

    def as_objects():
        evaluation = runner.run(evaluate(cases, adapter, settings))
        schema.encode_outputs("r", evaluation.outputs)
        return schema.encode_case_results("r", evaluation.results)

    rows = []
    objects_s, objects = best_cpu(as_objects)
    rows.append(_row("as objects", objects_s, n))
    if "as_columns" in inspect.signature(evaluate).parameters:
        columns_s, evaluation = best_cpu(
            lambda: runner.run(evaluate(cases, adapter, settings, as_columns=True))
        )
        assert evaluation.columns is not None, "the default metrics were not scored from columns"
        for name, column in zip(objects.column_names[1:], evaluation.columns.arrays(), strict=True):
            assert objects.column(name).combine_chunks().equals(column), name
        rows.append(_row("from columns", columns_s, n))
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    table = Table(
        f"Default metrics' rows without a judge, {n:,} cases ({len(METRIC_NAMES)} rows a case)",
        ["path", "CPU", "per case"],
        rows,
        [
            "CPU time in one process, best of three; the replay of the recording excluded",
            f"rows of both paths equal; `uptime`: {load}",
        ],
    )
    publish([table], args.emit)
    return 0


def _row(label: str, cpu_s: float, n: int) -> list[str]:
    return [label, f"{cpu_s:.2f} s", f"{cpu_s / n * 1e6:.1f} µs"]


if __name__ == "__main__":
    raise SystemExit(main())
