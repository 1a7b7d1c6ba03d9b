"""The run path's scoring against pytrec_eval: the four original metrics and all nine.

"from shard tables" times what a shard step now runs to score a batch of cases
and make its result rows, from the two Arrow tables a shard holds for it: the
dataset rows (``store.tables.DATASET``) and the outputs rows
(``store.tables.OUTPUTS``) of the same cases. In the shard step's batches
(``EVAL_BATCH_CASES``): ``run.column_scoring.column_results`` (the retrieval
batch built from the list columns, the numpy kernels, the rows as columns) and
the ``case_results`` table the writer writes (``store.run_store.result_table``).
Not included: reading the Parquet files, writing them, Dagster. The tables are
built before the clock starts.

"from id lists" is the same starting from plain Python id lists: building the
two tables (ids, expected ids, chunk structs) with pyarrow, then the above.

"objects (a live adapter)" is what a shard step runs when the outputs come
from an adapter rather than a stored recording (a recorded run's shard scores
from its tables, ``run.evaluate.evaluate_recorded``): the ``Case``/``CaseOutput``
/``Chunk`` objects, then ``evaluate(..., as_columns=True)`` in the shard step's
batches on one ``asyncio.Runner`` with an adapter handing back the built
outputs, which encodes the dataset and outputs and scores from the columns.
pytrec_eval is timed including building its qrel and run dicts. All run side by
side in one child process per size:

- four: precision, recall, MRR and nDCG at 5 against ``P_5``, ``recall_5``,
  ``recip_rank``, ``ndcg_cut_5``;
- nine: the four plus ``map``, ``r_precision``, ``hit_rate_at_k``, ``bpref``
  and ``judged_at_k`` against pytrec_eval's eight equivalents (``map``,
  ``Rprec``, ``success_5``, ``bpref``; trec_eval has no Judged@k, so
  pytrec_eval computes one measure fewer).

Values are compared query by query for every path (largest absolute
difference, target <= 1e-12). Targets (on the shard's path from its tables):
four >= 3x pytrec_eval's speed at 1,000,000 cases; nine no slower than
pytrec_eval. Wall and CPU seconds are both reported: on a shared machine the
CPU figures are the steadier ones.
``python -m benchmarks.run_path_scoring [--quick] [--sizes N,N] [--paths tables,lists,objects]``
(``--paths tables`` times only the shard's path from its tables beside pytrec_eval).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks._common import (
    PYTHON,
    REPO,
    WORK,
    Benchmark,
    Table,
    count,
    publish,
    seconds,
    verdict,
)
from benchmarks._synthetic import RetrievalData, retrieval_data
from benchmarks.retrieval_scoring import built_objects, ranked_dict
from ragproof_assets.evaluation.shards import EVAL_BATCH_CASES
from ragproof_core.config.settings import RunSettings
from ragproof_core.gc_pause import collector_paused
from ragproof_core.metrics.result_columns import ResultColumns, concat
from ragproof_core.model import Case, CaseOutput
from ragproof_core.run.column_scoring import column_results
from ragproof_core.run.evaluate import Selection, evaluate
from ragproof_core.store.run_store import result_table
from ragproof_core.store.schema import CHUNK_LIST_TYPE, CHUNK_TYPE, encode_dataset, encode_outputs

BENCHMARK = Benchmark(
    title="The run path's scoring, four metrics and nine",
    measures=(
        "What a shard step runs to score a batch and make its `case_results` rows "
        "(`run.column_scoring.column_results` and the rows as an Arrow table, in the "
        "shard's batches of 20,000) against pytrec_eval on the seeded cases of "
        "`retrieval_scoring.py`, side by side in one process per size (100,000 and "
        "1,000,000): from the dataset and outputs tables a shard reads, from plain id "
        "lists (building those tables first), and the shard's object path "
        "(`Case`/`CaseOutput`/`Chunk` and `evaluate(..., as_columns=True)`); the four "
        "original metrics, and all nine (pytrec_eval's eight equivalents: trec_eval has "
        "no Judged@k); pytrec_eval timed including building its dicts; largest difference "
        "per query."
    ),
    target=(
        "from the shard's tables: four >= 3x pytrec_eval at 1,000,000; "
        "nine no slower than pytrec_eval"
    ),
    order=50,
)

K = 5
FOUR = {
    "retrieval.precision_at_k": "P_5",
    "retrieval.recall_at_k": "recall_5",
    "retrieval.mrr": "recip_rank",
    "retrieval.ndcg_at_k": "ndcg_cut_5",
}
NINE = {
    **FOUR,
    "retrieval.map": "map",
    "retrieval.r_precision": "Rprec",
    "retrieval.hit_rate_at_k": "success_5",
    "retrieval.bpref": "bpref",
    "retrieval.judged_at_k": None,  # not a trec_eval measure
}
TARGETS = {"four": 3.0, "nine": 1.0}
TOLERANCE = 1e-12
RUN_ID = "20261202T000000Z-bench0"


class BuiltOutputs:
    """An adapter handing back outputs already built, keyed by case id, as
    ``RecordedAdapter.run_case`` does once it has parsed a line."""

    shares_event_loop = True
    reports_latency = True

    def __init__(self, outputs: Sequence[CaseOutput]) -> None:
        self._by_id = {output.case_id: output for output in outputs}

    async def run_case(self, case: Case) -> CaseOutput:
        return self._by_id[case.id]


def shard_tables(data: RetrievalData) -> tuple[pa.Table, pa.Table]:
    """The dataset and outputs tables of the cases, as the store encodes them (built
    through the model's objects, untimed: what a shard reads from its files)."""
    cases, outputs = built_objects(data)
    return encode_dataset(RUN_ID, cases), encode_outputs(RUN_ID, outputs)


def tables_from_lists(data: RetrievalData) -> tuple[pa.Table, pa.Table]:
    """The columns a shard scores from, built from plain id lists with pyarrow: the
    dataset's id and expected ids, the outputs' case id and retrieved chunks (id,
    empty text, no score or metadata), and the columns the scoring does not read null."""
    n = len(data)
    case_ids = pa.array(data.case_ids, pa.string())
    ids = pa.array(data.retrieved, pa.list_(pa.string()))
    flat = ids.flatten()
    chunks = pa.StructArray.from_arrays(
        [
            flat,
            pa.repeat(pa.scalar("", pa.string()), len(flat)),
            pa.nulls(len(flat), pa.float64()),
            pa.nulls(len(flat), pa.string()),
        ],
        fields=list(CHUNK_TYPE),
    )
    retrieved = pa.ListArray.from_arrays(ids.offsets, chunks, type=CHUNK_LIST_TYPE)
    dataset = pa.table(
        {
            "id": case_ids,
            "expected_source_ids": pa.array(data.relevant, pa.list_(pa.string())),
            "expected_source_grades_json": pa.nulls(n, pa.string()),
        }
    )
    outputs = pa.table(
        {"case_id": case_ids, "retrieved": retrieved, "error": pa.nulls(n, pa.string())}
    )
    return dataset, outputs


def scored_from_tables(
    dataset: pa.Table, outputs: pa.Table, names: Sequence[str]
) -> list[ResultColumns]:
    """What a shard step runs to score its cases from its tables (module docstring):
    ``column_results`` and the ``case_results`` table, batch by batch."""
    settings = RunSettings(k=K, metrics=tuple(names))
    selection = Selection.from_settings(settings)
    scorers = selection.column_scorers(has_judge=False, has_turns=False)
    parts = []
    with collector_paused():
        for start in range(0, dataset.num_rows, EVAL_BATCH_CASES):
            rows = column_results(
                dataset.slice(start, EVAL_BATCH_CASES),
                outputs.slice(start, EVAL_BATCH_CASES),
                settings,
                scorers,
                selection.result_names,
            )
            result_table(RUN_ID, rows)
            parts.append(rows)
    return parts


def scored_from_lists(data: RetrievalData, names: Sequence[str]) -> list[ResultColumns]:
    return scored_from_tables(*tables_from_lists(data), names)


def live_adapter(data: RetrievalData, names: Sequence[str]) -> list[ResultColumns]:
    """What a shard step runs on these cases with a live adapter (module docstring)."""
    settings = RunSettings(k=K, metrics=tuple(names))
    parts = []
    with collector_paused():
        cases, outputs = built_objects(data)
        adapter = BuiltOutputs(outputs)
        with asyncio.Runner() as runner:
            for start in range(0, len(cases), EVAL_BATCH_CASES):
                batch = cases[start : start + EVAL_BATCH_CASES]
                evaluation = runner.run(evaluate(batch, adapter, settings, as_columns=True))
                result_table(RUN_ID, evaluation.columns)
                parts.append(evaluation.columns)
    return parts


def pytrec(data: RetrievalData, measures: set[str]) -> dict:
    import pytrec_eval

    qrel = {c: dict.fromkeys(rel, 1) for c, rel in zip(data.case_ids, data.relevant, strict=True)}
    run = {c: ranked_dict(ids) for c, ids in zip(data.case_ids, data.retrieved, strict=True)}
    return pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)


def largest_difference(
    ours: list[ResultColumns], theirs: dict, names: dict[str, str | None]
) -> tuple[float, int]:
    """The largest absolute difference from pytrec_eval over every scored row with a
    pytrec_eval twin, and how many rows were compared."""
    rows = concat(ours)
    scored = np.asarray(rows.status.to_numpy(zero_copy_only=False) == "scored")
    worst, compared = 0.0, 0
    for case_id, metric, value in zip(
        np.asarray(rows.case_id.to_numpy(zero_copy_only=False))[scored],
        np.asarray(rows.metric.to_numpy(zero_copy_only=False))[scored],
        np.asarray(rows.value.to_numpy(zero_copy_only=False))[scored],
        strict=True,
    ):
        measured, measure = theirs.get(case_id), names[metric]
        if measured is not None and measure is not None:
            worst = max(worst, abs(value - measured[measure]))
            compared += 1
    return worst, compared


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float, object]:
    """Best wall time and best CPU time (this process's) of ``repeats`` calls, and the
    last call's result."""
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeats):
        result = None
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu, result


PATHS = {
    "tables": lambda data, tables, names: scored_from_tables(*tables, names),
    "lists": lambda data, tables, names: scored_from_lists(data, names),
    "objects": lambda data, tables, names: live_adapter(data, names),
}


def measure_size(n: int, paths: Sequence[str] = tuple(PATHS)) -> dict:
    data = retrieval_data(n)
    tables = shard_tables(data)
    repeats = 3 if n <= 200_000 else 1
    out: dict = {"n": n, "load": os.getloadavg()[0], "sets": {}}
    for label, names in (("four", FOUR), ("nine", NINE)):
        measures = {m for m in names.values() if m is not None}
        figures: dict = {"measures": len(measures), "difference": 0.0}
        theirs_s, theirs_cpu, theirs = timed(lambda m=measures: pytrec(data, m), repeats)
        figures |= {"pytrec_s": theirs_s, "pytrec_cpu": theirs_cpu}
        for path in paths:
            run = PATHS[path]
            wall, cpu, ours = timed(lambda r=run, n=names: r(data, tables, n), repeats)
            figures |= {f"{path}_s": wall, f"{path}_cpu": cpu}
            difference, compared = largest_difference(ours, theirs, names)
            figures["difference"] = max(figures["difference"], difference)
            figures["rows"] = sum(len(part) for part in ours)
            figures["compared"] = compared
            del ours
        out["sets"][label] = figures
        del theirs
    out["load_after"] = os.getloadavg()[0]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--emit", type=Path)
    parser.add_argument("--child", type=int)
    parser.add_argument(
        "--paths",
        default=",".join(PATHS),
        help="which of ragproof's paths to time (tables, lists, objects); default all",
    )
    args = parser.parse_args(argv)
    paths = [p for p in args.paths.split(",") if p]
    if not set(paths) <= set(PATHS) or "tables" not in paths:
        parser.error(f"--paths: 'tables' and any of {', '.join(PATHS)}")
    if args.child:
        print(json.dumps(measure_size(args.child, paths)))
        return
    sizes = [2_000, 20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    rows, largest = [], {}
    for n in sizes:
        child = subprocess.run(
            [PYTHON, "-m", "benchmarks.run_path_scoring", "--child", str(n), "--paths", args.paths],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=True,
        )
        measured = json.loads(child.stdout)
        for label, m in measured["sets"].items():
            ratio = m["pytrec_s"] / m["tables_s"]
            cpu_ratio = m["pytrec_cpu"] / m["tables_cpu"]
            largest[label] = (n, ratio, cpu_ratio)

            def versus(path: str, m=m) -> str:
                if f"{path}_s" not in m:
                    return "not timed"
                return (
                    f"{seconds(m[f'{path}_s'])} ({seconds(m[f'{path}_cpu'])}): "
                    f"{m['pytrec_s'] / m[f'{path}_s']:.2f}x "
                    f"({m['pytrec_cpu'] / m[f'{path}_cpu']:.2f}x)"
                )

            rows.append(
                [count(n), f"{label} ({m['measures']} pytrec_eval measures)",
                 versus("tables"), versus("lists"), versus("objects"),
                 f"{seconds(m['pytrec_s'])} ({seconds(m['pytrec_cpu'])})",
                 f"{m['difference']:.0e}" if m["difference"] else "0",
                 f"{measured['load']:.2f} / {measured['load_after']:.2f}"]
            )  # fmt: skip
        print(f"{n:,} cases measured", flush=True)
    notes = [
        f"{label}: the shard's scoring from its tables at {ratio:.2f}x pytrec_eval's speed "
        f"by wall, {cpu_ratio:.2f}x by CPU, at {count(n)} cases (target >= "
        f"{TARGETS[label]:g}x): {verdict(min(ratio, cpu_ratio) >= TARGETS[label])}."
        for label, (n, ratio, cpu_ratio) in largest.items()
    ]
    notes += [
        "Each cell: wall seconds (CPU seconds): speed against pytrec_eval by wall (by CPU); "
        "best of 3 below 200,000 cases, 1 above. pytrec_eval includes building its qrel and "
        "run dicts from the id lists.",
        "'from shard tables': column_results and the case_results table in the shard's "
        "batches of 20,000 cases, from the dataset and outputs tables a shard holds (no "
        "Parquet read or write, no Dagster). 'from id lists': building those tables with "
        "pyarrow first. 'objects (a live adapter)': Case/CaseOutput/Chunk objects, evaluate("
        "as_columns=True) with an adapter handing back the built outputs (the recording "
        "read as JSON is not included), which encodes both tables and scores from them.",
        "Largest difference: over every scored row of every path with a pytrec_eval twin, "
        "query by query.",
        "The machine is shared with other engineers' sessions: the 1-minute load before "
        "and after each size is beside its rows; all ran side by side in one process.",
    ]
    WORK.mkdir(parents=True, exist_ok=True)
    publish(
        [
            Table(
                "The run path's scoring vs pytrec_eval, four metrics and nine (k = 5)",
                ["cases", "metrics", "from shard tables", "from id lists",
                 "objects (a live adapter)", "pytrec_eval", "largest difference",
                 "1-min load before / after"],
                rows,
                notes,
            )
        ],
        args.emit,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
