"""The run path's scoring against pytrec_eval: the four original metrics and all nine.

"ragproof run path" times the code a shard step runs (``evaluate_shard``), on
the same seeded synthetic cases as ``retrieval_scoring.py``, from plain id
lists: building the ``Case``, ``CaseOutput`` and ``Chunk`` objects the run
builds from its dataset and recording, then ``evaluate()`` over them in the
shard step's batches (``EVAL_BATCH_CASES``) on one ``asyncio.Runner``, with an
adapter that hands back the built outputs (the recorded adapter's replay minus
its JSON parsing, which ``run_floor`` measures with the rest of the input
work). Inside, ``evaluate`` scores the retrieval group in batches
(``MetricGroup.score_batch``: ``RetrievalBatch`` and its numpy kernels).
"scoring call" times the part of that which is scoring: the same objects and
the batch call ``evaluate`` makes (``run.evaluate.batch_results``), without
the per-case loop around it. pytrec_eval is timed including building its qrel
and run dicts. The three run side by side in one child process per size:

- four: precision, recall, MRR and nDCG at 5 against ``P_5``, ``recall_5``,
  ``recip_rank``, ``ndcg_cut_5``;
- nine: the four plus ``map``, ``r_precision``, ``hit_rate_at_k``, ``bpref``
  and ``judged_at_k`` against pytrec_eval's eight equivalents (``map``,
  ``Rprec``, ``success_5``, ``bpref``; trec_eval has no Judged@k, so
  pytrec_eval computes one measure fewer).

Values are compared query by query (largest absolute difference, target
<= 1e-12). Targets (on the run path): four >= 3x pytrec_eval's speed at
1,000,000 cases; nine no slower than pytrec_eval. Wall and CPU seconds are
both reported: on a shared machine the CPU figures are the steadier ones.
``python -m benchmarks.run_path_scoring [--quick] [--sizes N,N]``.
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

from benchmarks._common import PYTHON, REPO, WORK, Table, count, publish, seconds, verdict
from benchmarks._synthetic import RetrievalData, retrieval_data
from benchmarks.retrieval_scoring import built_objects, ranked_dict
from ragproof_assets.evaluation.shards import EVAL_BATCH_CASES
from ragproof_core.config.settings import RunSettings
from ragproof_core.gc_pause import collector_paused
from ragproof_core.model import Case, CaseOutput, MetricResult
from ragproof_core.run.evaluate import SCORE_BATCH_CASES, Selection, batch_results, evaluate

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


class BuiltOutputs:
    """An adapter handing back outputs already built, keyed by case id, as
    ``RecordedAdapter.run_case`` does once it has parsed a line."""

    shares_event_loop = True
    reports_latency = True

    def __init__(self, outputs: Sequence[CaseOutput]) -> None:
        self._by_id = {output.case_id: output for output in outputs}

    async def run_case(self, case: Case) -> CaseOutput:
        return self._by_id[case.id]


def ragproof_run_path(data: RetrievalData, names: Sequence[str]) -> list[MetricResult]:
    """What a shard step runs on these cases (module docstring)."""
    settings = RunSettings(k=K, metrics=tuple(names))
    results: list[MetricResult] = []
    with collector_paused():
        cases, outputs = built_objects(data)
        adapter = BuiltOutputs(outputs)
        with asyncio.Runner() as runner:
            for start in range(0, len(cases), EVAL_BATCH_CASES):
                batch = cases[start : start + EVAL_BATCH_CASES]
                results.extend(runner.run(evaluate(batch, adapter, settings)).results)
    return results


def ragproof_scoring_call(data: RetrievalData, names: Sequence[str]) -> list[MetricResult]:
    """The scoring ``evaluate`` does inside the run path: its batch call alone."""
    settings = RunSettings(k=K, metrics=tuple(names))
    selection = Selection.from_settings(settings)
    results: list[MetricResult] = []
    with collector_paused():
        cases, outputs = built_objects(data)
        for start in range(0, len(cases), SCORE_BATCH_CASES):
            end = start + SCORE_BATCH_CASES
            for rows in batch_results(cases[start:end], outputs[start:end], settings, selection):
                results.extend(rows)
    return results


def pytrec(data: RetrievalData, measures: set[str]) -> dict:
    import pytrec_eval

    qrel = {c: dict.fromkeys(rel, 1) for c, rel in zip(data.case_ids, data.relevant, strict=True)}
    run = {c: ranked_dict(ids) for c, ids in zip(data.case_ids, data.retrieved, strict=True)}
    return pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)


def largest_difference(
    ours: list[MetricResult], theirs: dict, names: dict[str, str | None]
) -> float:
    worst = 0.0
    for row in ours:
        measured = theirs.get(row.case_id)
        measure = names[row.metric]
        if measured is not None and measure is not None:
            worst = max(worst, abs(row.value - measured[measure]))
    return worst


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


def measure_size(n: int) -> dict:
    data = retrieval_data(n)
    repeats = 3 if n <= 200_000 else 1
    out: dict = {"n": n, "load": os.getloadavg()[0], "sets": {}}
    for label, names in (("four", FOUR), ("nine", NINE)):
        measures = {m for m in names.values() if m is not None}
        figures: dict = {"measures": len(measures)}
        theirs_s, theirs_cpu, theirs = timed(lambda m=measures: pytrec(data, m), repeats)
        figures |= {"pytrec_s": theirs_s, "pytrec_cpu": theirs_cpu}
        call_s, call_cpu, ours = timed(lambda n=names: ragproof_scoring_call(data, n), repeats)
        figures |= {"call_s": call_s, "call_cpu": call_cpu}
        difference = largest_difference(ours, theirs, names)
        del ours
        run_s, run_cpu, ours = timed(lambda n=names: ragproof_run_path(data, n), repeats)
        figures |= {"ragproof_s": run_s, "ragproof_cpu": run_cpu}
        figures["rows"] = len(ours)
        figures["difference"] = max(difference, largest_difference(ours, theirs, names))
        out["sets"][label] = figures
        del ours, theirs
    out["load_after"] = os.getloadavg()[0]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--emit", type=Path)
    parser.add_argument("--child", type=int)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_size(args.child)))
        return
    sizes = [2_000, 20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    rows, largest = [], {}
    for n in sizes:
        child = subprocess.run(
            [PYTHON, "-m", "benchmarks.run_path_scoring", "--child", str(n)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=True,
        )
        measured = json.loads(child.stdout)
        for label, m in measured["sets"].items():
            ratio = m["pytrec_s"] / m["ragproof_s"]
            cpu_ratio = m["pytrec_cpu"] / m["ragproof_cpu"]
            largest[label] = (n, ratio, cpu_ratio)
            rows.append(
                [count(n), f"{label} ({m['measures']} pytrec_eval measures)",
                 f"{seconds(m['ragproof_s'])} ({seconds(m['ragproof_cpu'])})",
                 f"{seconds(m['call_s'])} ({seconds(m['call_cpu'])})",
                 f"{seconds(m['pytrec_s'])} ({seconds(m['pytrec_cpu'])})",
                 f"{ratio:.2f}x ({cpu_ratio:.2f}x)",
                 f"{m['pytrec_cpu'] / m['call_cpu']:.2f}x",
                 f"{m['difference']:.0e}" if m["difference"] else "0",
                 f"{measured['load']:.2f} / {measured['load_after']:.2f}"]
            )  # fmt: skip
        print(f"{n:,} cases measured", flush=True)
    notes = [
        f"{label}: the run path at {ratio:.2f}x pytrec_eval's speed by wall, {cpu_ratio:.2f}x "
        f"by CPU, at {count(n)} cases (target >= {TARGETS[label]:g}x): "
        f"{verdict(min(ratio, cpu_ratio) >= TARGETS[label])}."
        for label, (n, ratio, cpu_ratio) in largest.items()
    ]
    notes += [
        "Speed = pytrec_eval's seconds / ragproof's; wall, then CPU in brackets; each timed "
        "including building its inputs from plain id lists, best of 3 below 200,000 cases, "
        "1 above. 'run path': the objects and evaluate() in the shard step's batches; "
        "'scoring call': the objects and the batch call evaluate makes, nothing around it.",
        "The machine is shared with other engineers' sessions: the 1-minute load before "
        "and after each size is beside its rows; all three ran side by side in one process.",
    ]
    WORK.mkdir(parents=True, exist_ok=True)
    publish(
        [
            Table(
                "The run path's scoring vs pytrec_eval, four metrics and nine (k = 5)",
                ["cases", "metrics", "ragproof run path (CPU)", "scoring call (CPU)",
                 "pytrec_eval (CPU)", "run path vs pytrec_eval",
                 "scoring call vs pytrec_eval (CPU)", "largest difference",
                 "1-min load before / after"],
                rows,
                notes,
            )
        ],
        args.emit,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
