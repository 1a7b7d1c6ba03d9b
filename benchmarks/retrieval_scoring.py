"""Benchmark 1: retrieval scoring, ragproof against pytrec_eval and ranx.

The same seeded synthetic cases (10 retrieved ids per case with duplicates, 1
to 5 relevant ids, 2% empty retrievals) are scored by each tool in one process,
and each tool's time includes building its inputs from plain id lists:

- ragproof, pipeline path: ``Case``/``CaseOutput``/``Chunk`` objects and
  ``retrieval_results`` per case, the code ``ragproof run`` executes, with the
  cyclic garbage collector paused as the run's loaders and ``evaluate`` pause it
  (``ragproof_core/gc_pause.py``);
- ragproof, kernel path: ``Chunk`` tuples, ``matched_ids`` and ``retrieval_scores``
  (collector paused likewise);
- ragproof, kernel on raw ids: ``dedupe`` and ``retrieval_scores`` on the id
  lists (the floor: no objects at all);
- pytrec_eval: qrel and run dicts, ``RelevanceEvaluator(...).evaluate``;
- ranx: ``Qrels``/``Run`` from dicts and ``evaluate``, first call (numba
  compiles its kernels, into an empty cache) and warm.

The other tools take a dict per query, so duplicates would collapse there
anyway; they get the deduplicated ranking with strictly decreasing scores, so
their order is ours. Values are compared query by query over the queries each
tool returns; the largest absolute difference per metric must be <= 1e-12.

Each size runs in its own child process (fresh numba cache, no memory carried
over). ``python -m benchmarks.retrieval_scoring [--quick]``.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks._common import (
    PYTHON,
    REPO,
    WORK,
    Benchmark,
    Table,
    count,
    parse_args,
    publish,
    seconds,
    verdict,
)
from benchmarks._synthetic import RETRIEVED_PER_CASE, RetrievalData, retrieval_data
from ragproof_core.model import Case, CaseOutput, Chunk

BENCHMARK = Benchmark(
    title="Retrieval scoring",
    measures=(
        "The same seeded 100,000 and 1,000,000 synthetic cases (10 retrieved ids with "
        "duplicates, 1 to 5 relevant, 2% empty retrievals) scored by ragproof (pipeline "
        "path: `Case`/`CaseOutput`/`Chunk` + `retrieval_results`; kernel paths: "
        "`matched_ids` + `retrieval_scores`, and `dedupe` + `retrieval_scores` on raw "
        "ids), pytrec_eval and ranx (first call with numba compilation, and warm), each "
        "timed including building its inputs; largest absolute difference per metric."
    ),
    target="ragproof >= 3x faster than pytrec_eval at 1,000,000; differences <= 1e-12",
    order=10,
)

FULL_SIZES = (100_000, 1_000_000)
QUICK_SIZES = (2_000, 20_000)
K = 5
TOLERANCE = 1e-12
COLD_RANX_MAX = 200_000  # above this, ranx's first (compiling) call is not timed
TARGET_RATIO = 3.0  # ragproof (pipeline path) vs pytrec_eval at the largest size

METRICS = ("precision@5", "recall@5", "mrr", "ndcg@5")  # our column names, ranx's spelling
PYTREC_MEASURES = {"P_5": 0, "recall_5": 1, "recip_rank": 2, "ndcg_cut_5": 3}
RANX_METRICS = {"precision@5": 0, "recall@5": 1, "mrr": 2, "ndcg@5": 3}

Scores = dict[str, tuple[float, float, float, float]]


def _repeats(n: int) -> int:
    return 3 if n <= 200_000 else 1


class GcClock:
    """Seconds spent in Python's cyclic garbage collector while installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started

    def __enter__(self) -> GcClock:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def _timed(fn: Callable[[], object], repeats: int) -> tuple[float, float, object]:
    """Best wall time of ``repeats`` calls, the garbage collector's share of that
    call, and the last call's result."""
    best, best_gc, result = float("inf"), 0.0, None
    for _ in range(repeats):
        result = None
        gc.collect()
        with GcClock() as clock:
            start = time.perf_counter()
            result = fn()
            elapsed = time.perf_counter() - start
        if elapsed < best:
            best, best_gc = elapsed, clock.seconds
    return best, best_gc, result


# -- the scorers: each starts from the plain lists of RetrievalData ---------------------


def built_objects(data: RetrievalData) -> tuple[list[Case], list[CaseOutput]]:
    """The ``Case`` and ``CaseOutput`` objects (ten ``Chunk`` each) a run builds from its
    dataset and recording."""
    cases = [
        Case(case_id, "question", expected_source_ids=tuple(relevant))
        for case_id, relevant in zip(data.case_ids, data.relevant, strict=True)
    ]
    outputs = [
        CaseOutput(case_id, retrieved=tuple([Chunk(doc, "") for doc in ids]))
        for case_id, ids in zip(data.case_ids, data.retrieved, strict=True)
    ]
    return cases, outputs


def ragproof_pipeline(data: RetrievalData) -> list:
    from ragproof_core.config.settings import RunSettings
    from ragproof_core.gc_pause import collector_paused
    from ragproof_core.metrics.retrieval import retrieval_results

    settings = RunSettings(k=K)
    with collector_paused():
        cases, outputs = built_objects(data)
        return [retrieval_results(c, o, settings) for c, o in zip(cases, outputs, strict=True)]


def ragproof_kernel(data: RetrievalData) -> list:
    from ragproof_core.gc_pause import collector_paused
    from ragproof_core.metrics.retrieval import matched_ids, retrieval_scores
    from ragproof_core.model import Chunk

    with collector_paused():
        chunk_lists = [tuple([Chunk(doc, "") for doc in ids]) for ids in data.retrieved]
        return [
            retrieval_scores(matched_ids(chunks, "chunk"), frozenset(relevant), K)
            for chunks, relevant in zip(chunk_lists, data.relevant, strict=True)
        ]


def ragproof_raw_kernel(data: RetrievalData) -> list:
    from ragproof_core.metrics.retrieval import dedupe, retrieval_scores

    return [
        retrieval_scores(dedupe(ids), frozenset(relevant), K)
        for ids, relevant in zip(data.retrieved, data.relevant, strict=True)
    ]


def ranked_dict(ids: list[str]) -> dict[str, float]:
    # Strictly decreasing scores in our (deduplicated) order.
    return {doc: float(RETRIEVED_PER_CASE - i) for i, doc in enumerate(dict.fromkeys(ids))}


def pytrec(data: RetrievalData) -> dict:
    import pytrec_eval

    qrel = {c: dict.fromkeys(rel, 1) for c, rel in zip(data.case_ids, data.relevant, strict=True)}
    run = {c: ranked_dict(ids) for c, ids in zip(data.case_ids, data.retrieved, strict=True)}
    return pytrec_eval.RelevanceEvaluator(qrel, set(PYTREC_MEASURES)).evaluate(run)


def ranx_scores(data: RetrievalData):
    from ranx import Qrels, Run, evaluate

    qrels = Qrels(
        {c: dict.fromkeys(rel, 1) for c, rel in zip(data.case_ids, data.relevant, strict=True)}
    )
    run = Run({c: ranked_dict(ids) for c, ids in zip(data.case_ids, data.retrieved, strict=True)})
    evaluate(qrels, run, list(RANX_METRICS), return_mean=False)
    return run.scores  # metric -> query id -> score, filled by evaluate


# -- checks -----------------------------------------------------------------------------


def _ours(results: list) -> Scores:
    return {
        rows[0].case_id: (rows[0].value, rows[1].value, rows[2].value, rows[3].value)
        for rows in results
    }


def _pytrec_as_scores(raw: dict) -> Scores:
    out = {}
    for query, measures in raw.items():
        values = [0.0] * 4
        for name, index in PYTREC_MEASURES.items():
            values[index] = measures[name]
        out[query] = tuple(values)
    return out


def _ranx_as_scores(raw) -> Scores:
    columns = [raw[name] for name in RANX_METRICS]
    return {query: tuple(float(col[query]) for col in columns) for query in columns[0]}


def max_differences(ours: Scores, theirs: Scores) -> list[float]:
    worst = [0.0] * 4
    for query, values in theirs.items():
        mine = ours[query]
        for i in range(4):
            worst[i] = max(worst[i], abs(mine[i] - values[i]))
    return worst


def semantics() -> dict[str, bool]:
    """Pin the tools' semantics we rely on with one hand-checked query.

    Ranked d1..d7 with only d7 relevant (and d8 relevant, never retrieved):
    reciprocal rank 1/7 means no cutoff; P@5 = 0 with hits beyond 5 ignored.
    A second query retrieves 3 ids, 1 relevant: P@5 = 1/5 means the divisor is 5.
    """
    qrel = {"q1": {"d7": 1, "d8": 1}, "q2": {"a": 1}}
    run = {
        "q1": {f"d{i}": float(10 - i) for i in range(1, 8)},
        "q2": {"x": 3.0, "a": 2.0, "y": 1.0},
    }
    import pytrec_eval
    from ranx import Qrels, Run, evaluate

    p = pytrec_eval.RelevanceEvaluator(qrel, set(PYTREC_MEASURES)).evaluate(run)
    r = evaluate(Qrels(qrel), Run(run), list(RANX_METRICS), return_mean=False)
    return {
        "pytrec_eval recip_rank uncut": p["q1"]["recip_rank"] == 1 / 7,
        "pytrec_eval P_5 divides by 5": p["q2"]["P_5"] == 1 / 5,
        "ranx mrr uncut": float(r["mrr"][0]) == 1 / 7,
        "ranx precision@5 divides by 5": float(r["precision@5"][1]) == 1 / 5,
    }


# -- one size, in a child process -------------------------------------------------------


def measure_size(n: int, time_cold_ranx: bool) -> dict:
    data = retrieval_data(n)
    repeats = _repeats(n)
    timings: dict[str, float] = {}
    gc_seconds: dict[str, float] = {}

    def measure(key: str, fn: Callable[[RetrievalData], object], times: int = repeats):
        timings[key], gc_seconds[key], result = _timed(lambda: fn(data), times)
        return result

    ours = _ours(measure("ragproof_pipeline", ragproof_pipeline))
    kernel = measure("ragproof_kernel", ragproof_kernel)
    kernel_same = all(ours[c] == v for c, v in zip(data.case_ids, kernel, strict=True))
    del kernel
    raw_kernel = measure("ragproof_raw_kernel", ragproof_raw_kernel)
    kernel_same = kernel_same and all(
        ours[c] == v for c, v in zip(data.case_ids, raw_kernel, strict=True)
    )
    del raw_kernel
    theirs_pytrec = _pytrec_as_scores(measure("pytrec_eval", pytrec))
    # ranx's first call in this process compiles its numba kernels. It runs after
    # the others so the compiler's leftovers do not slow their garbage collection.
    if time_cold_ranx:
        measure("ranx_cold", ranx_scores, 1)
    else:
        # Compilation does not depend on the size, and a cold call on a million
        # cases costs a minute more: warm up on a few queries, untimed.
        ranx_scores(retrieval_data(10, seed=1))
    theirs_ranx = _ranx_as_scores(measure("ranx_warm", ranx_scores))

    return {
        "n": n,
        "repeats": repeats,
        "empty_retrievals": data.empty_retrievals,
        "duplicated_rankings": data.duplicated_rankings,
        "timings": timings,
        "gc_seconds": gc_seconds,
        "kernel_paths_identical": kernel_same,
        "pytrec_returned": len(theirs_pytrec),
        "ranx_returned": len(theirs_ranx),
        "pytrec_max_diff": max_differences(ours, theirs_pytrec),
        "ranx_max_diff": max_differences(ours, theirs_ranx),
        "semantics": semantics(),
    }


def _child(sizes: list[int], time_cold_ranx: bool, out: Path) -> None:
    warnings.filterwarnings("ignore", module="numba")
    warnings.filterwarnings("ignore", message=".*unsafe cast.*")
    measured = [measure_size(n, time_cold_ranx and n <= COLD_RANX_MAX) for n in sizes]
    out.write_text(json.dumps(measured), encoding="utf-8")


def _run_child(sizes: Sequence[int], quick: bool) -> list[dict]:
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / f"retrieval-{'-'.join(map(str, sizes))}.json"
    env = dict(os.environ)
    # An empty numba cache, so ranx's first call really includes compilation.
    # (A quick run times no first call; numba's own cache then saves it a compile.)
    cache = None if quick else tempfile.TemporaryDirectory(prefix="numba-", dir=WORK)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache.name
    else:
        env.pop("NUMBA_CACHE_DIR", None)
    cold = "cold" if not quick else "warm-only"
    sizes_arg = ",".join(map(str, sizes))
    try:
        subprocess.run(
            [PYTHON, "-m", "benchmarks.retrieval_scoring", "--child", sizes_arg, cold, str(out)],
            cwd=REPO,
            env=env,
            check=True,
        )
    finally:
        if cache is not None:
            cache.cleanup()
    return json.loads(out.read_text(encoding="utf-8"))


# -- tables -----------------------------------------------------------------------------

ROWS = (
    ("ragproof_pipeline", "ragproof: Case/CaseOutput/Chunk + `retrieval_results`"),
    ("ragproof_kernel", "ragproof: Chunk tuples + `matched_ids` + `retrieval_scores`"),
    ("ragproof_raw_kernel", "ragproof: raw id lists + `dedupe` + `retrieval_scores`"),
    ("pytrec_eval", "pytrec_eval: dicts + `RelevanceEvaluator.evaluate`"),
    ("ranx_warm", "ranx: `Qrels`/`Run` + `evaluate`, warm (JIT compiled)"),
    ("ranx_cold", "ranx: same, first call in the process (includes numba JIT compile)"),
)


def _dropped_note(measured: list[dict]) -> str:
    dropped = {
        tool: sum(m["n"] - m[key] for m in measured)
        for tool, key in (("pytrec_eval", "pytrec_returned"), ("ranx", "ranx_returned"))
    }
    if not any(dropped.values()):
        return (
            "Neither tool dropped the queries with an empty retrieval (fed as an empty dict): "
            "both score them 0, as ragproof does, so every query is compared."
        )
    return (
        "Queries a tool did not return (empty retrievals) are left out of its comparison: "
        + ", ".join(f"{tool} dropped {count(n)}" for tool, n in dropped.items())
        + "."
    )


# The rows of ragproof's own code the speed target applies to.
TARGET_ROWS = ("ragproof_pipeline", "ragproof_kernel", "ragproof_raw_kernel")


def _fmt_diff(value: float) -> str:
    return "0" if value == 0 else f"{value:.1e}"


def tables(measured: list[dict], quick: bool) -> list[Table]:
    largest = measured[-1]
    ratio = largest["timings"]["pytrec_eval"] / largest["timings"]["ragproof_pipeline"]
    timing_rows = []
    for m in measured:
        t, gc_s = m["timings"], m["gc_seconds"]
        for key, label in ROWS:
            if key not in t:
                continue
            target = "-"
            if m is largest and key in TARGET_ROWS:
                met = t["pytrec_eval"] / t[key] >= TARGET_RATIO
                target = f">= {TARGET_RATIO:g}x: {verdict(met)}"
            timing_rows.append(
                [
                    count(m["n"]),
                    label,
                    seconds(t[key]),
                    f"{gc_s[key] / t[key]:.0%}",
                    f"{m['n'] / t[key]:,.0f}",
                    f"{t['pytrec_eval'] / t[key]:.2f}x",
                    target,
                ]
            )
    notes = [
        f"Target: ragproof at least {TARGET_RATIO:g}x faster than pytrec_eval at "
        f"{count(largest['n'])} cases, judged for each path of ragproof's code; the pipeline "
        f"path (what `ragproof run` executes) measured {ratio:.2f}x.",
        "Times include building each tool's inputs from plain id lists; best of "
        + ", ".join(f"{m['repeats']} at {count(m['n'])}" for m in measured)
        + ". 'GC' is the share of that time spent in Python's cyclic garbage collector "
        "(`gc.callbacks`).",
        "ranx's first call compiles its numba kernels into an empty cache; compilation does not "
        f"depend on the size, so above {count(COLD_RANX_MAX)} cases it is done untimed on 10 "
        "queries and only the warm call is timed.",
        "ragproof and pytrec_eval run on one core; ranx's numba kernels use every core.",
    ]
    if quick:
        notes.append(
            "QUICK MODE: sizes too small to judge the target; both sizes in one process, "
            "ranx's first call not timed."
        )
    speed = Table(
        "Retrieval scoring: time to score every case (4 metrics, k = 5)",
        ["cases", "scorer", "seconds", "GC", "cases/s", "speed vs pytrec_eval", "target"],
        timing_rows,
        notes,
    )

    agreement_rows = []
    for m in measured:
        for tool, diff_key, returned_key in (
            ("pytrec_eval", "pytrec_max_diff", "pytrec_returned"),
            ("ranx", "ranx_max_diff", "ranx_returned"),
        ):
            diffs = m[diff_key]
            dropped = m["n"] - m[returned_key]
            agreement_rows.append(
                [
                    count(m["n"]),
                    tool,
                    f"{count(m[returned_key])} ({count(dropped)} dropped)",
                    *(_fmt_diff(d) for d in diffs),
                    verdict(max(diffs) <= TOLERANCE),
                ]
            )
    first = measured[0]
    semantics_ok = all(all(m["semantics"].values()) for m in measured)
    notes = [
        f"Synthetic cases have {count(first['empty_retrievals'])} empty retrievals (of "
        f"{count(first['n'])}) and {count(first['duplicated_rankings'])} rankings with "
        "duplicate ids; the other tools get the deduplicated ranking with strictly "
        "decreasing scores, so their order equals ours.",
        _dropped_note(measured),
        "Semantics pinned on a hand-checked query (reciprocal rank over the whole list, "
        f"not cut at 5; precision divides by 5): {verdict(semantics_ok)}. "
        + "; ".join(f"{k}: {v}" for k, v in first["semantics"].items()),
        "The three ragproof paths give identical values: "
        + verdict(all(m["kernel_paths_identical"] for m in measured)),
    ]
    agreement = Table(
        f"Retrieval scoring: largest absolute difference from ragproof (target <= {TOLERANCE:g})",
        ["cases", "tool", "queries compared", *METRICS, "target"],
        agreement_rows,
        notes,
    )
    return [speed, agreement]


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        _child([int(n) for n in argv[1].split(",")], argv[2] == "cold", Path(argv[3]))
        return
    args = parse_args("Benchmark 1: retrieval scoring vs pytrec_eval and ranx.", argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    if args.quick:
        measured = _run_child(sizes, quick=True)  # one process: numba loads once
    else:
        measured = [m for n in sizes for m in _run_child([n], quick=False)]
    publish(tables(measured, args.quick), args.emit)


if __name__ == "__main__":
    main()
