"""The summary step's own work at scale: what ``run_summary`` computes (the summaries and
the HTML report), the distributions ``gather_shards`` shows and the failure-rate check,
each timed in a fresh process on one stored run; and a shard's own work on the same run
(shard 0 of 2, a recorded run: reading its rows, scoring, writing), both ways a shard
does it: ``shard_written`` reads every column and writes the outputs again (a run whose
outputs are not its recording as it is), ``shard_from_recording`` reads the scored
columns alone and writes only the case results (``run.evaluate.recording_scoring``).
The shard phases write a spare shard's files (``SPARE_SHARD``) and remove them.

    python -m benchmarks.summary_step [--cases N] [--store PATH --run RUN_ID] [--quick]

Without ``--store`` the run is materialized once by the real command (``ragproof run
--shards 2``, default metrics, no judge, on ``benchmarks/.work/shards-N``) into
``benchmarks/.work/summary-N/store`` and kept, so later invocations re-measure the
phases alone; that run's own seconds per Dagster step are printed too. Each phase is
``python -m benchmarks.summary_step --phase NAME`` under ``benchmarks._measure`` (wall,
CPU, peak RSS of that process alone), with the 1-minute load before it. ``imports`` is
the same process importing ragproof and doing nothing: the floor under every phase.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
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
)

BENCHMARK = Benchmark(
    title="The summary step's own work",
    measures=(
        "What the summary step computes (the summaries and the HTML report), the "
        "distributions and the failure-rate check, each timed in a fresh process on one "
        "stored 1,000,000-case run; and a shard's own work on the same run, both ways a "
        "shard does it."
    ),
    target="-",
    order=160,
    in_run_all=False,
)

PHASES = {
    "imports": "import ragproof's core, nothing else",
    "run_summary": "summaries + report data + HTML + write (as the run_summary asset)",
    "distributions": "gather_shards' distributions table",
    "failure_rate": "the failure_rate check's count",
    "shard_written": "shard 0 of 2: every column read, outputs and case results written",
    "shard_from_recording": "shard 0 of 2: the scored columns read, case results written",
}
# The shard index the shard phases write as (never one of the run's own).
SPARE_SHARD = 9_999


def shard_phase(store, run_id: str, *, from_recording: bool) -> dict:
    """Shard 0 of 2's batches as ``evaluate_shard`` runs them for a recorded run."""
    from ragproof_assets.evaluation.shards import EVAL_BATCH_CASES
    from ragproof_core.gc_pause import collector_paused
    from ragproof_core.metrics import run_registry
    from ragproof_core.run import (
        EVALUATION_DOCUMENT,
        evaluate_recorded,
        recording_scoring,
        unit_shard_ranges,
    )

    manifest = store.run_manifest(run_id)
    settings, registry = manifest.run, run_registry(manifest.metrics)
    unit_starts = store.dataset_unit_starts(run_id)
    rows = store.read_document(run_id, EVALUATION_DOCUMENT)["cases"]
    start, end = unit_shard_ranges(rows, 2, unit_starts)[0]
    plan = (
        recording_scoring(settings, registry, has_judge=False, has_turns=unit_starts is not None)
        if from_recording
        else None
    )
    if from_recording and plan is None:
        raise SystemExit("this run is not scored from its recording's columns")
    cases = 0
    # The work alone, after the imports (the step's process has them already).
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        with store.results_writer(run_id, SPARE_SHARD, outputs=plan is None) as writer:
            for batch in store.iter_run_batches(
                run_id, start, end, EVAL_BATCH_CASES, columns=None if plan is None else plan.columns
            ):
                with collector_paused():
                    evaluation = evaluate_recorded(
                        batch.dataset,
                        batch.recorded,
                        settings,
                        registry,
                        has_judge=False,
                        full_rows=batch.whole,
                    )
                    writer.write(evaluation.stored_outputs(), evaluation.stored_results())
                    evaluation.status_counts()
                    evaluation.failures(10)
                    cases += evaluation.cases
    finally:
        for table in ("outputs", "case_results"):
            store.files.remove(store.layout.shard_table_path(run_id, table, SPARE_SHARD))
    return {
        "cases": cases,
        "work_s": time.perf_counter() - wall,
        "work_cpu_s": time.process_time() - cpu,
    }


def phase(name: str, store_root: str, run_id: str) -> None:
    """One phase, in this process (the child ``main`` starts)."""
    from ragproof_core.present import distributions_table, gather_report, render_html
    from ragproof_core.store import RunStore, summarize_run

    if name == "imports":
        return
    store = RunStore(store_root)
    if name == "run_summary":
        summaries, tally = summarize_run(store, run_id, store.run_manifest(run_id).run.metrics)
        html = render_html(gather_report(store, run_id, tally=tally))
        store.write_report(run_id, html)
        print(json.dumps({"metrics": len(summaries), "report_bytes": len(html.encode())}))
    elif name == "distributions":
        tally = store.tally_case_results(run_id)
        print(json.dumps({"rows": len(distributions_table(tally.metrics, tally.values))}))
    elif name == "failure_rate":
        print(json.dumps({"failed_cases": store.failed_case_share(run_id)}))
    elif name in ("shard_written", "shard_from_recording"):
        print(json.dumps(shard_phase(store, run_id, from_recording=name != "shard_written")))
    else:
        raise SystemExit(f"unknown phase {name!r}")


def materialize(n: int) -> tuple[Path, str, dict[str, float]]:
    """Run ``ragproof run --shards 2`` on the recorded run of ``n`` cases into a kept store."""
    from benchmarks._synthetic import write_recorded_run
    from benchmarks.shards_store import step_seconds

    recorded = write_recorded_run(WORK / f"shards-{n}", n)
    home = WORK / f"summary-{n}"
    shutil.rmtree(home, ignore_errors=True)
    env = clean_env(RAGPROOF_STORE=str(home / "store"), DAGSTER_HOME=str(home / "dagster"))
    child = run_measured(recorded.run_command("--shards", "2"), env, REPO, timeout=3600)
    if child.returncode != 0:
        raise RuntimeError(f"ragproof run failed ({child.returncode}):\n{child.stderr[-3000:]}")
    run_id = json.loads(child.stdout)["run_id"]
    return home / "store", run_id, step_seconds(home / "dagster")


def measure(name: str, store: Path, run_id: str) -> dict:
    load = os.getloadavg()[0]
    cmd = [PYTHON, "-m", "benchmarks.summary_step", "--phase", name]
    cmd += ["--store", str(store), "--run", run_id]
    child = run_measured(cmd, clean_env(), REPO, timeout=3600)
    if child.returncode != 0:
        raise RuntimeError(f"phase {name} failed:\n{child.stderr[-3000:]}")
    out = json.loads(child.stdout) if child.stdout.strip() else {}
    return {
        "wall_s": child.wall_s,
        "cpu_s": child.cpu_s,
        "rss": child.max_rss_mib,
        "load": load,
        **out,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="2,000 cases")
    parser.add_argument("--store", type=Path, help="a store holding the run already")
    parser.add_argument("--run", help="the run's id in --store")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--phases", help=f"comma-separated, of {', '.join(PHASES)} (default: all)")
    parser.add_argument("--emit", type=Path, help="also write the tables as JSON here (run_all)")
    args = parser.parse_args(argv)
    if args.phase:
        phase(args.phase, str(args.store), args.run)
        return
    n = 2_000 if args.quick else args.cases
    steps: dict[str, float] = {}
    if args.store is None:
        kept = WORK / f"summary-{n}"
        found = sorted((kept / "store" / "runs").glob("2*")) if kept.exists() else []
        if found:
            store, run_id = kept / "store", found[-1].name
        else:
            store, run_id, steps = materialize(n)
    else:
        store, run_id = args.store, args.run
    if steps:
        print("the materializing run's steps: " + json.dumps(steps), flush=True)
    rows = []
    chosen = PHASES if not args.phases else {p: PHASES[p] for p in args.phases.split(",")}
    for name, what in chosen.items():
        m = measure(name, store, run_id)
        rows.append(
            [
                name,
                what,
                seconds(m["wall_s"]),
                seconds(m["cpu_s"]),
                f"{m['rss']:,.0f} MB",
                f"{m['report_bytes'] / 1e6:.1f} MB" if "report_bytes" in m else "",
                f"{seconds(m['work_s'])} / {seconds(m['work_cpu_s'])}" if "work_s" in m else "",
                f"{m['load']:.1f}",
            ]
        )
        print(f"{name}: {m['wall_s']:.2f} s, {m['rss']:,.0f} MB", flush=True)
    run = f"{count(n)} cases" if args.store is None else f"stored run {run_id}"
    table = Table(
        f"The summary step's work, each phase in a fresh process ({run})",
        [
            "phase",
            "what",
            "wall",
            "CPU",
            "peak RSS",
            "report",
            "work alone (wall / CPU)",
            "1-min load before",
        ],
        rows,
        [
            "Peak RSS is the phase's process alone (ru_maxrss), Python and imports included; "
            "'imports' is that floor. A shard phase imports Dagster too (the step's batch "
            "size); 'work alone' is its shard's work after the imports.",
            "Targets (issue 24): under 1.5 GB per process at 1,000,000 cases; a few seconds.",
        ],
    )
    publish([table], args.emit)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
