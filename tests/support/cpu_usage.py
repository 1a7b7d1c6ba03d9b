"""Where the suite's CPU goes: each test's CPU seconds, its own and its processes'.

``pytest --cpu-report DIR`` (with or without ``-n N``) writes one JSON file per
pytest process into DIR: for each test, the CPU seconds (user + system) that its
set-up, call and tear-down cost the pytest process itself (``RUSAGE_SELF``), the
subprocesses it waited for (``RUSAGE_CHILDREN``: exec'd commands, servers stopped
in a tear-down, with every process they waited for in turn) and the commands forked
from the preloaded server (tests/support/preloaded_cli.py, which reports each
command's ``wait4`` figure back), and its wall seconds. A module- or session-scoped
set-up counts for the test that made it.

``python -m tests.support.cpu_usage DIR [N]`` sums the files: the whole suite,
the N files and the N tests that took the most CPU.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

OPTION = "--cpu-report"


def process_cpu_seconds() -> float:
    """CPU of this process and of the children it has waited for, so far."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


@dataclass(frozen=True)
class TestCost:
    nodeid: str
    cpu_s: float
    wall_s: float

    @property
    def file(self) -> str:
        return self.nodeid.split("::", 1)[0]


class CpuRecorder:
    """The pytest plugin: one per pytest process."""

    def __init__(self, folder: Path, worker: str, forked_cpu: Callable[[], float]) -> None:
        self.folder = folder
        self.worker = worker
        self.forked_cpu = forked_cpu
        self.costs: list[TestCost] = []

    def _now(self) -> float:
        return process_cpu_seconds() + self.forked_cpu()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        cpu, wall = self._now(), time.monotonic()
        yield
        self.costs.append(TestCost(item.nodeid, self._now() - cpu, time.monotonic() - wall))

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
        help="write each test's CPU seconds (its own and its subprocesses') into DIR; "
        "`python -m tests.support.cpu_usage DIR` sums them",
    )


def register(config: pytest.Config, forked_cpu: Callable[[], float]) -> None:
    folder = config.getoption("cpu_report")
    if folder is None:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    config.pluginmanager.register(CpuRecorder(Path(folder), worker, forked_cpu), "cpu_usage")


# ---- the summary -----------------------------------------------------------


def load_costs(folder: Path) -> list[TestCost]:
    return [
        TestCost(nodeid, cpu, wall)
        for path in sorted(folder.glob("cpu-*.json"))
        for nodeid, cpu, wall in json.loads(path.read_text())
    ]


def by_file(costs: Iterable[TestCost]) -> list[tuple[str, float, float, int]]:
    """(file, CPU s, wall s, tests), most CPU first."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for cost in costs:
        row = sums[cost.file]
        row[0] += cost.cpu_s
        row[1] += cost.wall_s
        row[2] += 1
    rows = [(name, cpu, wall, int(n)) for name, (cpu, wall, n) in sums.items()]
    return sorted(rows, key=lambda row: -row[1])


def summary(costs: list[TestCost], top: int) -> str:
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
