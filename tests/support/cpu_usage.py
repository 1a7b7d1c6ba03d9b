"""Where the suite's CPU goes: each test's CPU seconds, its own and its processes'.

``pytest --cpu-report DIR`` (with or without ``-n N``) writes one JSON file per
pytest process into DIR: for each test, the CPU seconds (user + system) that its
set-up, call and tear-down cost the pytest process and every process under it, and
its wall seconds. A process's figure in ``/proc/PID/stat`` counts its own CPU and
that of the children it has waited for, so the sum over the pytest process and its
living descendants only grows, whoever reaps whom: the preloaded server's forked
commands, servers (moto, `ragproof serve`, Chromium) while they run and once they
end. Lost: a process whose parent ends before it (Python's forkserver of a
`--shards N` run outlives its command), reaped by init. A module- or
session-scoped set-up counts for the test that made it.

``python -m tests.support.cpu_usage DIR [N]`` sums the files: the whole suite,
the N files and the N tests that took the most CPU.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

OPTION = "--cpu-report"
_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")


def _stat_fields(pid: str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name; None if it has ended."""
    try:
        text = (PROC / pid / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def tree_cpu_seconds(root: int) -> float:
    """CPU of ``root`` and its living descendants, each with its waited-for children."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is None:
            continue
        # Fields 4 (ppid) and 14 to 17 (utime, stime, cutime, cstime) of proc(5).
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = sum(int(value) for value in fields[11:15])
    children: dict[int, list[int]] = defaultdict(list)
    for pid, parent in parents.items():
        children[parent].append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children[pid])
    return total / _TICKS_PER_S


@dataclass(frozen=True)
class CostOfTest:
    nodeid: str
    cpu_s: float
    wall_s: float

    @property
    def file(self) -> str:
        return self.nodeid.split("::", 1)[0]


class CpuRecorder:
    """The pytest plugin: one per pytest process."""

    def __init__(self, folder: Path, worker: str) -> None:
        self.folder = folder
        self.worker = worker
        self.pid = os.getpid()
        self.costs: list[CostOfTest] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        cpu, wall = tree_cpu_seconds(self.pid), time.monotonic()
        yield
        cost = CostOfTest(item.nodeid, tree_cpu_seconds(self.pid) - cpu, time.monotonic() - wall)
        self.costs.append(cost)

    def pytest_sessionfinish(self, session):
        if not self.costs:  # xdist's controller runs no test
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        rows = [[c.nodeid, round(c.cpu_s, 3), round(c.wall_s, 3)] for c in self.costs]
        (self.folder / f"cpu-{self.worker}.json").write_text(json.dumps(rows))


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        metavar="DIR",
        default=None,
        help="write each test's CPU seconds (its own and its processes') into DIR; "
        "`python -m tests.support.cpu_usage DIR` sums them",
    )


def register(config: pytest.Config) -> None:
    folder = config.getoption("cpu_report")
    if folder is None:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    config.pluginmanager.register(CpuRecorder(Path(folder), worker), "cpu_usage")


# ---- the summary -----------------------------------------------------------


def load_costs(folder: Path) -> list[CostOfTest]:
    return [
        CostOfTest(nodeid, cpu, wall)
        for path in sorted(folder.glob("cpu-*.json"))
        for nodeid, cpu, wall in json.loads(path.read_text())
    ]


def by_file(costs: Iterable[CostOfTest]) -> list[tuple[str, float, float, int]]:
    """(file, CPU s, wall s, tests), most CPU first."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for cost in costs:
        row = sums[cost.file]
        row[0] += cost.cpu_s
        row[1] += cost.wall_s
        row[2] += 1
    rows = [(name, cpu, wall, int(n)) for name, (cpu, wall, n) in sums.items()]
    return sorted(rows, key=lambda row: -row[1])


def summary(costs: list[CostOfTest], top: int) -> str:
    lines = [
        f"{len(costs)} tests: {sum(c.cpu_s for c in costs):.1f} s CPU, "
        f"{sum(c.wall_s for c in costs):.1f} s of test wall (summed over workers)",
        "",
        "| file | tests | CPU s | wall s |",
        "|---|---|---|---|",
    ]
    files = sorted(by_file(costs), key=lambda row: -row[1])
    lines += [f"| `{name}` | {n} | {cpu:.1f} | {wall:.1f} |" for name, cpu, wall, n in files[:top]]
    lines += ["", "| test | CPU s | wall s |", "|---|---|---|"]
    tests = sorted(costs, key=lambda c: -c.cpu_s)[:top]
    lines += [f"| `{c.nodeid}` | {c.cpu_s:.1f} | {c.wall_s:.1f} |" for c in tests]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    top = int(argv[1]) if len(argv) > 1 else 20
    print(summary(load_costs(folder), top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
