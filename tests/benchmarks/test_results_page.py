"""docs/benchmarks.md is what its header says: the page `benchmarks/run_all.py` renders from
each benchmark's latest figures (benchmarks/results/*.json), and nothing else."""

from __future__ import annotations

import pkgutil
from dataclasses import replace

import benchmarks
from benchmarks import run_all
from benchmarks._common import Benchmark, Table, verdict
from benchmarks._results import DOC, Result, read_result, read_results, render, write_result

BENCH = Benchmark(title="Alpha speed", measures="What alpha does.", target="< 1 s", order=5)


def _result(name: str, bench: Benchmark, met: bool, headline: str = "") -> Result:
    return Result(
        name=name,
        benchmark=bench,
        command=f".venv/bin/python -m benchmarks.{name}",
        date="2026-12-07 04:00 UTC",
        seconds=12.0,
        load_before=1.25,
        load_after=1.5,
        machine="2 cores, 23.5 GiB, a CPU",
        versions={"python": "3.11.7", "dagster": "1.13.27"},
        commit="abc1234",
        tables=[
            Table("Alpha: seconds", ["size", "wall", "target"], [["10", "0.5 s", verdict(met)]])
        ],
        headline=headline,
    )


def test_the_page_is_what_run_all_renders_from_the_result_files():
    assert DOC.read_text(encoding="utf-8") == run_all.rendered(), (
        "docs/benchmarks.md differs from its result files: "
        "run `.venv/bin/python -m benchmarks.run_all --render`"
    )


def test_every_benchmark_module_declares_itself_and_every_result_names_one():
    modules = {
        module.name
        for module in pkgutil.iter_modules(benchmarks.__path__)
        if not module.name.startswith("_") and module.name not in run_all.TOOLS
    }
    assert set(run_all.declared()) == modules
    assert {result.name for result in read_results()} <= modules


def test_a_result_is_read_back_as_written(tmp_path):
    written = _result("alpha", BENCH, met=True, headline="0.5 s")
    write_result(written, tmp_path)
    assert read_result(tmp_path / "alpha.json") == written


def test_the_page_orders_sections_and_sums_each_benchmark_up_once(tmp_path):
    later = replace(BENCH, title="Beta memory", target="< 1 GB", order=1)
    page = render(
        [_result("alpha", BENCH, met=True, headline="0.5 s"), _result("beta", later, met=False)],
        [("gamma", replace(BENCH, title="Gamma", order=9))],
    )
    # The summary: one row a benchmark, its headline, target, verdict, date and load.
    assert (
        "| [Beta memory](#beta-memory) | see its section | < 1 GB | **MISSED** (1 of 1) |" in page
    )
    assert (
        "| [Alpha speed](#alpha-speed) | 0.5 s | < 1 s | met | 2026-12-07 | 1.25 / 1.50 |" in page
    )
    assert "| Gamma (`gamma`) | not measured yet |" in page
    # Sections by order: beta (1) before alpha (5); each once, with its figures' context.
    assert page.index("## Beta memory") < page.index("## Alpha speed")
    assert page.count("### Alpha: seconds") == 2
    assert (
        "- Measured 2026-12-07 04:00 UTC with `.venv/bin/python -m benchmarks.alpha` (12 s)" in page
    )
    assert "1-minute load 1.25 before and 1.50 after" in page
