"""Shared plumbing for the benchmark scripts: their declaration, tables, machine facts,
child processes.

Each benchmark module declares ``BENCHMARK = Benchmark(...)`` (what it measures, its
target, where its section goes in ``docs/benchmarks.md``) and has ``main(argv)``
accepting ``--quick`` (small sizes, a sanity check of the scripts, not a measurement)
and ``--emit PATH`` (write its tables as JSON for ``run_all``). Tables are printed as
Markdown so the terminal output and ``docs/benchmarks.md`` read the same.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "benchmarks" / ".work"
PYTHON = sys.executable
RAGPROOF = str(Path(PYTHON).with_name("ragproof"))

PACKAGES = ("ragproof", "dagster", "litellm", "duckdb", "pytrec-eval-terrier", "ranx", "numba")


@dataclass(frozen=True)
class Benchmark:
    """What ``docs/benchmarks.md`` says of a benchmark beside its latest figures. Each
    benchmark module declares one as ``BENCHMARK``; ``run_all`` finds it there."""

    title: str
    measures: str
    # The target in words; "-" for a benchmark that only reports.
    target: str
    # Where its section goes: sections are ordered by it, then by module name.
    order: int
    # The arguments the published figures are measured with (``run_all`` passes them).
    args: tuple[str, ...] = ()
    # False for a benchmark too long (or too specialised) for the full ``run_all``:
    # it runs with ``run_all --only NAME``.
    in_run_all: bool = True


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"### {self.title}", ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "|".join("---" for _ in self.columns) + "|")
        lines.extend("| " + " | ".join(row) + " |" for row in self.rows)
        if self.notes:
            lines.append("")
            lines.extend(f"- {note}" for note in self.notes)
        return "\n".join(lines) + "\n"


def verdict(met: bool) -> str:
    return "met" if met else "**MISSED**"


def seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def count(value: int) -> str:
    return f"{value:,}"


def parse_args(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the script works")
    parser.add_argument("--emit", type=Path, help="also write the tables as JSON here (run_all)")
    return parser.parse_args(argv)


def publish(tables: list[Table], emit: Path | None, headline: str = "") -> None:
    """Print the tables; with ``emit``, also write them for ``run_all``. ``headline``: the
    one figure docs/benchmarks.md's summary shows for this benchmark (its sections show
    every table)."""
    for table in tables:
        print(table.markdown(), flush=True)
    if headline:
        print(f"Headline: {headline}", flush=True)
    if emit is not None:
        emit.parent.mkdir(parents=True, exist_ok=True)
        emitted = {"headline": headline, "tables": [asdict(t) for t in tables]}
        emit.write_text(json.dumps(emitted, indent=1), encoding="utf-8")


def load_emitted(path: Path) -> tuple[list[Table], str]:
    """The tables and headline ``publish`` wrote to ``path``."""
    emitted = json.loads(path.read_text(encoding="utf-8"))
    return [Table(**raw) for raw in emitted["tables"]], emitted["headline"]


# -- the machine ------------------------------------------------------------------------


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def total_memory_gib() -> float:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    raise RuntimeError("no MemTotal in /proc/meminfo")


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


# -- child processes --------------------------------------------------------------------


@dataclass(frozen=True)
class ChildRun:
    returncode: int
    wall_s: float
    cpu_s: float  # user + system
    max_rss_mib: float  # peak resident set of the command's process
    stdout: str
    stderr: str


def run_measured(cmd: Sequence[str], env: dict[str, str], cwd: Path, timeout: float) -> ChildRun:
    """Run ``cmd`` through ``benchmarks._measure``: wall, CPU and peak memory of it alone."""
    WORK.mkdir(parents=True, exist_ok=True)
    stats_file = WORK / f"measure-{os.getpid()}-{time.monotonic_ns()}.json"
    wrapper = [PYTHON, "-m", "benchmarks._measure", str(stats_file), "--", *cmd]
    # This checkout for the wrapper, after the caller's: an earlier checkout a benchmark
    # puts on PYTHONPATH (run_floor --against) must be the code its command imports.
    env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(REPO)]))}
    proc = subprocess.run(
        wrapper, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise RuntimeError(f"measuring {cmd[:3]} failed:\n{proc.stderr}")
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    stats_file.unlink()
    return ChildRun(
        stats["returncode"],
        stats["wall_s"],
        stats["cpu_s"],
        stats["max_rss_mib"],
        proc.stdout,
        proc.stderr,
    )


def check_checkout(code: Path) -> Path:
    """``code`` resolved, once a process with it on PYTHONPATH is seen to import ragproof
    from it: an editable install's import finder comes before PYTHONPATH, and a benchmark
    "against an earlier checkout" would time this checkout twice."""
    code = code.resolve()
    found = subprocess.run(
        [PYTHON, "-c", "import ragproof_cli; print(ragproof_cli.__file__)"],
        env={**os.environ, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    imported = Path(found.stdout.strip() or ".").resolve()
    if not imported.is_relative_to(code):
        raise SystemExit(
            f"ragproof imports from {imported}, not from {code}: install this checkout with "
            "`pip install --no-deps -e . --config-settings editable_mode=compat`"
        )
    return code


def measure_json_command(cmd: Sequence[str], env: dict[str, str], cwd: Path) -> dict:
    """Run a command that prints JSON (``ragproof run --json``) measured, with the
    1-minute load read before it: the machine is shared, so each figure carries it."""
    load = os.getloadavg()[0]
    child = run_measured(cmd, env, cwd, timeout=3600)
    if child.returncode != 0:
        raise RuntimeError(f"{list(cmd[:4])} failed ({child.returncode}):\n{child.stderr[-3000:]}")
    return {
        "wall_s": child.wall_s,
        "cpu_s": child.cpu_s,
        "rss_mb": child.max_rss_mib * 2**20 / 1e6,
        "load": load,
        "out": json.loads(child.stdout),
    }


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for a ``ragproof`` child: no judge unless asked for."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPROOF_")}
    env.pop("OPENAI_API_KEY", None)
    env.update(extra)
    return env
