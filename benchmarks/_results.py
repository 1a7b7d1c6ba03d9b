"""Each benchmark's latest figures, and ``docs/benchmarks.md`` made from them.

A benchmark's figures are kept as ``benchmarks/results/<name>.json`` (a ``Result``:
its tables, the date, the 1-minute load before and after, the command, the machine),
replaced whole each time ``run_all`` measures it. ``docs/benchmarks.md`` is rendered
from those files alone: a summary of every benchmark's headline figure and target,
then each benchmark's section. Earlier figures live in git history, not in the page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks._common import REPO, Benchmark, Table

RESULTS = REPO / "benchmarks" / "results"
DOC = REPO / "docs" / "benchmarks.md"
# The page's hand-appended history before it was generated from results, for the record.
HISTORY_COMMIT = "c7e80e1"
REGENERATE = ".venv/bin/python -m benchmarks.run_all --render"


@dataclass(frozen=True)
class Result:
    """One benchmark's latest figures, as ``run_all`` recorded them."""

    name: str
    benchmark: Benchmark
    command: str
    # "2026-12-07 03:40 UTC": when the benchmark started.
    date: str
    # None: not recorded (figures carried over from the hand-kept page).
    seconds: float | None
    load_before: float
    load_after: float | None
    # "2 cores, 23.5 GiB, AMD EPYC"
    machine: str
    versions: dict[str, str]
    # The commit measured ("+ changes" when the worktree had uncommitted ones).
    commit: str
    tables: list[Table]
    headline: str = ""
    # Said under the section's heading: how these figures were obtained, when that is
    # not simply the command (carried over from a hand-kept page, measured by hand).
    note: str = ""


def result_path(name: str, folder: Path = RESULTS) -> Path:
    return folder / f"{name}.json"


def write_result(result: Result, folder: Path = RESULTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = result_path(result.name, folder)
    path.write_text(json.dumps(asdict(result), indent=1) + "\n", encoding="utf-8")
    return path


def read_result(path: Path) -> Result:
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw["benchmark"] = Benchmark(**{**raw["benchmark"], "args": tuple(raw["benchmark"]["args"])})
    raw["tables"] = [Table(**table) for table in raw["tables"]]
    return Result(**raw)


def read_results(folder: Path = RESULTS) -> list[Result]:
    return [read_result(path) for path in sorted(folder.glob("*.json"))]


def verdicts(tables: Iterable[Table]) -> tuple[int, int]:
    """How many of the tables' cells say a target was met, and how many missed
    (``_common.verdict``'s words: a cell that is or starts with them, or a note's
    "(target ...): met." that a benchmark without a verdict column ends with)."""
    met = missed = 0
    for table in tables:
        for cell in (*(cell for row in table.rows for cell in row), *table.notes):
            if cell.startswith("**MISSED**") or ": **MISSED**" in cell:
                missed += 1
            elif cell == "met" or cell.startswith("met ") or cell.rstrip(".").endswith(": met"):
                met += 1
    return met, missed


def verdict_cell(tables: Iterable[Table]) -> str:
    met, missed = verdicts(tables)
    if missed:
        return f"**MISSED** ({missed} of {met + missed})"
    return "met" if met else "-"


def anchor(title: str) -> str:
    """The fragment GitHub's Markdown gives a heading."""
    slug = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return "#" + slug.replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary(results: list[Result], unmeasured: list[tuple[str, Benchmark]]) -> str:
    lines = [
        "| benchmark | latest figure | target | verdict | measured | 1-min load before / after |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        bench = result.benchmark
        lines.append(
            f"| [{_cell(bench.title)}]({anchor(bench.title)}) | "
            f"{_cell(result.headline or 'see its section')} | {_cell(bench.target)} | "
            f"{verdict_cell(result.tables)} | {result.date[:10]} | {_loads(result)} |"
        )
    for name, bench in unmeasured:
        lines.append(
            f"| {_cell(bench.title)} (`{name}`) | not measured yet | {_cell(bench.target)} "
            "| - | - | - |"
        )
    return "\n".join(lines) + "\n"


def _loads(result: Result) -> str:
    after = "-" if result.load_after is None else f"{result.load_after:.2f}"
    return f"{result.load_before:.2f} / {after}"


def section(result: Result) -> str:
    bench = result.benchmark
    took = "" if result.seconds is None else f" ({result.seconds:.0f} s)"
    load = f"1-minute load {result.load_before:.2f} before"
    if result.load_after is not None:
        load += f" and {result.load_after:.2f} after"
    versions = "".join(f", {name} {version}" for name, version in result.versions.items())
    lines = [
        f"## {bench.title}",
        "",
        bench.measures,
        "",
        f"- Target: {bench.target}",
        f"- Measured {result.date} with `{result.command}`{took}, {load}; "
        f"{result.machine}{versions}; ragproof at `{result.commit}`.",
    ]
    if result.headline:
        lines.append(f"- Headline: {result.headline}")
    if result.note:
        lines.append(f"- {result.note}")
    body = "".join("\n" + table.markdown() for table in result.tables)
    return "\n".join(lines) + "\n" + body


def ordered(results: list[Result]) -> list[Result]:
    return sorted(results, key=lambda result: (result.benchmark.order, result.name))


def render(results: list[Result], unmeasured: list[tuple[str, Benchmark]]) -> str:
    """docs/benchmarks.md: the summary, then each measured benchmark's section."""
    results = ordered(results)
    unmeasured = sorted(unmeasured, key=lambda item: (item[1].order, item[0]))
    parts = [
        "# Benchmarks",
        "",
        "Generated by `benchmarks/run_all.py` from `benchmarks/results/*.json`; do not edit "
        "by hand. Each benchmark's section holds its latest figures only, with the date, "
        "the machine's 1-minute load and the command they were measured with: the machine "
        "is shared, so read every figure beside its load, and compare figures measured "
        "side by side, not across sections. Earlier figures are in git history "
        "(`git log -p benchmarks/results/NAME.json`; the hand-kept sessions before this "
        f"page was generated are in `git show {HISTORY_COMMIT}:docs/benchmarks.md`).",
        "",
        "To measure one benchmark again and rewrite its section: "
        "`.venv/bin/python -m benchmarks.run_all --only NAME`; every benchmark: "
        "`.venv/bin/python -m benchmarks.run_all` (how to add one: `benchmarks/README.md`).",
        "",
        summary(results, unmeasured),
        *(section(result) for result in results),
    ]
    return "\n".join(parts)
