"""Run benchmarks, keep each one's latest figures, and write docs/benchmarks.md.

    .venv/bin/python -m benchmarks.run_all                  # every benchmark in the full run
    .venv/bin/python -m benchmarks.run_all --only NAME      # one (repeatable), any benchmark
    .venv/bin/python -m benchmarks.run_all --only NAME -- --cases 200000   # its own arguments
    .venv/bin/python -m benchmarks.run_all --render         # measure nothing: rewrite the page
    .venv/bin/python -m benchmarks.run_all --quick          # small sizes: checks the scripts
    .venv/bin/python -m benchmarks.run_all --list           # every benchmark, last measured when

A benchmark is a module of this package declaring ``BENCHMARK`` (``_common.Benchmark``).
Each runs as its own child process (no memory, JIT state or imports carried from one to
the next) and prints its tables as it goes; its figures then replace
``benchmarks/results/<name>.json``, with the date, the 1-minute load before and after,
the command and the commit, and the page is rendered from every result file
(``_results.render``). ``--quick`` keeps its results and page under ``benchmarks/.work/``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import benchmarks
from benchmarks._common import (
    PYTHON,
    REPO,
    WORK,
    Benchmark,
    cpu_count,
    load_emitted,
    total_memory_gib,
    versions,
)
from benchmarks._results import (
    DOC,
    RESULTS,
    Result,
    read_result,
    read_results,
    render,
    result_path,
    write_result,
)

# Modules of the package that are tools, not benchmarks.
TOOLS = ("run_all", "profile_run")
QUICK_RESULTS = WORK / "results-quick"
QUICK_DOC = WORK / "benchmarks-quick.md"


def declared() -> dict[str, Benchmark]:
    """Every benchmark module of the package and its declaration, by module name."""
    found = {}
    for module in pkgutil.iter_modules(benchmarks.__path__):
        if module.name.startswith("_") or module.name in TOOLS:
            continue
        declaration = getattr(
            importlib.import_module(f"benchmarks.{module.name}"), "BENCHMARK", None
        )
        if isinstance(declaration, Benchmark):
            found[module.name] = declaration
    return found


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def machine() -> str:
    return f"{cpu_count()} cores, {total_memory_gib():.1f} GiB, {_cpu_model()}"


def commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{head} + changes" if git("status", "--porcelain", "--untracked-files=no") else head


def measure(name: str, bench: Benchmark, args: list[str], quick: bool) -> Result:
    """Run one benchmark in a child process; its figures as a ``Result``."""
    emit = WORK / f"tables-{name}.json"
    emit.unlink(missing_ok=True)
    cmd = [PYTHON, "-m", f"benchmarks.{name}", *args]
    if quick:
        cmd.append("--quick")
    shown = " ".join([".venv/bin/python", *cmd[1:]])
    print(f"== {bench.title}: {shown}", flush=True)
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    done = subprocess.run([*cmd, "--emit", str(emit)], cwd=REPO)
    elapsed = time.perf_counter() - began
    load_after = os.getloadavg()[0]
    if done.returncode != 0:
        raise SystemExit(f"run_all: {name} failed (exit {done.returncode})")
    print(f"== {bench.title}: {elapsed:.0f} s\n", flush=True)
    tables, headline = load_emitted(emit)
    return Result(
        name=name,
        benchmark=bench,
        command=shown,
        date=date,
        seconds=elapsed,
        load_before=load_before,
        load_after=load_after,
        machine=machine(),
        versions={k: v for k, v in versions().items() if v != "not installed"},
        commit=commit(),
        tables=tables,
        headline=headline,
    )


def rendered(folder: Path = RESULTS) -> str:
    """The page for the result files in ``folder``, every declared benchmark without one
    listed as not measured yet."""
    results = read_results(folder)
    measured = {result.name for result in results}
    unmeasured = [(name, bench) for name, bench in declared().items() if name not in measured]
    return render(results, unmeasured)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, passed = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    found = declared()
    parser = argparse.ArgumentParser(description="Run benchmarks; write docs/benchmarks.md.")
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the scripts")
    parser.add_argument("--only", choices=sorted(found), action="append", help="repeatable")
    parser.add_argument("--render", action="store_true", help="measure nothing; rewrite the page")
    parser.add_argument("--list", action="store_true", help="every benchmark and its last figures")
    args = parser.parse_args(own)
    if passed and len(args.only or ()) != 1:
        parser.error("arguments after -- go to one benchmark: give exactly one --only")
    folder, out = (QUICK_RESULTS, QUICK_DOC) if args.quick else (RESULTS, DOC)

    if args.list:
        for name, bench in sorted(found.items(), key=lambda item: (item[1].order, item[0])):
            path = result_path(name, folder)
            when = read_result(path).date if path.exists() else "not measured yet"
            full = "" if bench.in_run_all else " (--only)"
            print(f"{name:24} {when:22} {bench.title}{full}")
        return 0
    if not args.render:
        chosen = args.only or [name for name, bench in found.items() if bench.in_run_all]
        WORK.mkdir(parents=True, exist_ok=True)
        for name in sorted(chosen, key=lambda name: (found[name].order, name)):
            bench = found[name]
            write_result(measure(name, bench, passed or list(bench.args), args.quick), folder)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(rendered(folder), encoding="utf-8")
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
