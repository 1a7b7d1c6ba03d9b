"""How `pytest -n N` hands tests to its workers: in units, heaviest first.

A unit is either one test or every test of one ``xdist_group`` (the tests that
share an expensive module-scoped set-up: a `ragproof run` whose store several tests
read, a Dagster instance, a trained fixture). xdist's own ``--dist loadgroup`` would
keep a group on one worker, but under pytest 9 it cannot: it renames the items
through an attribute pytest no longer reads, so every worker that gets one test of
a module builds the module's set-up again. This scheduler takes ``--dist load``'s
place instead (the `pytest_xdist_make_scheduler` hook in tests/conftest.py).

The controller process collects no tests, so the workers tell it the units: each
writes one small JSON file after collection (into the folder that
``pytest_configure_node`` gave it) and the scheduler reads it when all workers have
collected. Units go out heaviest first, one at a time, to whichever worker has
fewer than two tests queued: the long ones start at once and the many short ones
fill the gaps, so no worker idles while another has a queue.

A test weighs the seconds it took in a full run, from tests/durations.json (only
tests of a second or more are listed; ``pytest -n 3 --update-test-durations``
updates it with the tests it ran); a test not listed there weighs by its ``slow(weight=N)`` mark.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.report import report_collection_diff
from xdist.workermanage import WorkerController, parse_tx_spec_config

UNITS_DIR_KEY = "ragproof_units_dir"
# A worker runs a test only once it knows the next one (to tear down what that one
# does not share), so each is kept two tests ahead, as in xdist's own schedulers.
MIN_PENDING = 2
DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"
# Seconds for a test tests/durations.json does not list yet (a new one): a test
# marked slow runs `ragproof` subprocesses, some tens of seconds in a full run.
SLOW_WEIGHT = 30.0
UNMARKED_WEIGHT = 0.5
LISTED_FROM_S = 1.0  # the file lists the tests that take at least this long


@dataclass(frozen=True)
class WorkUnit:
    """Tests (by index into the collection) that must run together on one worker."""

    indices: tuple[int, ...]
    weight: float


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    return json.loads(path.read_text()) if path.exists() else {}


def item_weight(item: pytest.Item, durations: dict[str, float]) -> float:
    """The test's expected seconds: as measured, else ``slow(weight=N)`` counts N slow tests."""
    if item.nodeid in durations:
        return durations[item.nodeid]
    slow = item.get_closest_marker("slow")
    if slow is None:
        return UNMARKED_WEIGHT
    return SLOW_WEIGHT * float(slow.kwargs.get("weight", 1))


def item_group(item: pytest.Item) -> str | None:
    """The ``xdist_group`` the test belongs to (several marks: one joint name), if any."""
    names = sorted(
        {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
    )
    return "_".join(names) or None


def write_units(items: Sequence[pytest.Item], folder: Path, worker_id: str) -> None:
    """Record each collected test's group and weight for the controller's scheduler."""
    durations = load_durations()
    rows = [[item.nodeid, item_group(item), item_weight(item, durations)] for item in items]
    target = folder / f"{worker_id}.json"
    partial = target.with_suffix(".part")
    partial.write_text(json.dumps(rows))
    os.replace(partial, target)  # the controller never reads a half-written file


def plan_units(collection: Sequence[str], rows: Iterable[list]) -> list[WorkUnit]:
    """The collection cut into units, heaviest first; ties keep collection order.

    A test the rows do not mention (they come from another collection) is a unit
    of its own, so a mismatch costs balance, never a test.
    """
    described = {nodeid: (group, weight) for nodeid, group, weight in rows}
    grouped: dict[str, list[int]] = {}
    weights: dict[str, float] = {}
    for index, nodeid in enumerate(collection):
        group, weight = described.get(nodeid, (None, UNMARKED_WEIGHT))
        key = f"group:{group}" if group else f"test:{index}"
        grouped.setdefault(key, []).append(index)
        weights[key] = weights.get(key, 0.0) + weight
    units = [WorkUnit(tuple(indices), weights[key]) for key, indices in grouped.items()]
    return sorted(units, key=lambda unit: -unit.weight)  # sorted() is stable


class UnitScheduling:
    """An xdist scheduler (the interface of xdist.scheduler.protocol.Scheduling) that
    sends whole units to idle workers, heaviest first."""

    def __init__(self, config: pytest.Config, units_dir: Path, log: Producer) -> None:
        self.config = config
        self.units_dir = units_dir
        self.log = log.unitsched
        self.numnodes = len(parse_tx_spec_config(config))
        self.node2collection: dict[WorkerController, list[str]] = {}
        self.node2pending: dict[WorkerController, list[int]] = {}
        self.collection: list[str] | None = None
        self.queue: deque[WorkUnit] = deque()
        self.durations: dict[str, float] = {}  # seconds each finished test took

    @property
    def nodes(self) -> list[WorkerController]:
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.node2collection) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.queue:
            return False
        return all(len(pending) < MIN_PENDING for pending in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.queue) or any(self.node2pending.values())

    def add_node(self, node: WorkerController) -> None:
        assert node not in self.node2pending
        self.node2pending[node] = []

    def add_node_collection(self, node: WorkerController, collection: Sequence[str]) -> None:
        assert node in self.node2pending
        if self.collection_is_completed:
            # A worker started later (one died): it must have collected the same tests.
            assert self.collection is not None
            if list(collection) != self.collection:
                first = next(iter(self.node2collection))
                self.log(
                    report_collection_diff(
                        self.collection, collection, first.gateway.id, node.gateway.id
                    )
                )
                return
        self.node2collection[node] = list(collection)

    def mark_test_complete(
        self, node: WorkerController, item_index: int, duration: float | None = None
    ) -> None:
        self.node2pending[node].remove(item_index)
        if duration is not None and self.collection is not None:
            self.durations[self.collection[item_index]] = duration
        self.check_schedule()

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        self.queue.appendleft(WorkUnit((self.collection.index(item),), UNMARKED_WEIGHT))
        self.check_schedule()

    def remove_pending_tests_from_node(
        self, node: WorkerController, indices: Sequence[int]
    ) -> None:
        raise NotImplementedError("this scheduler never asks a worker to give tests back")

    def remove_node(self, node: WorkerController) -> str | None:
        """A worker is gone: done, or crashed mid-test (that test is reported as the
        crash; the rest of its queue goes back to the others)."""
        pending = self.node2pending.pop(node)
        crashed = None
        if pending:
            assert self.collection is not None
            crashed = self.collection[pending.pop(0)]
        if pending:
            self.queue.appendleft(WorkUnit(tuple(pending), UNMARKED_WEIGHT))
        self.check_schedule()
        return crashed

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:  # a worker came back: just hand out work
            self.check_schedule()
            return
        if not self._same_collections():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = next(iter(self.node2collection.values()))
        self.queue.extend(plan_units(self.collection, self._unit_rows()))
        self.check_schedule()

    def check_schedule(self) -> None:
        for node, pending in self.node2pending.items():
            if node.shutting_down:
                continue
            sent: list[int] = []
            while self.queue and len(pending) + len(sent) < MIN_PENDING:
                sent.extend(self.queue.popleft().indices)
            if sent:
                pending.extend(sent)
                node.send_runtest_some(sent)
            if not self.queue:
                # Nothing left to give: it runs what it holds, then stops.
                node.shutdown()

    def _unit_rows(self) -> list[list]:
        for node in self.node2collection:
            path = self.units_dir / f"{node.gateway.id}.json"
            if path.exists():
                return json.loads(path.read_text())
        self.log("no worker described its tests: one unit per test, in collection order")
        return []

    def _same_collections(self) -> bool:
        (first, collection), *others = self.node2collection.items()
        same = True
        for node, other in others:
            diff = report_collection_diff(collection, other, first.gateway.id, node.gateway.id)
            if diff:
                same = False
                self.log(diff)
                self.config.hook.pytest_collectreport(
                    report=pytest.CollectReport(
                        nodeid=node.gateway.id, outcome="failed", longrepr=diff, result=[]
                    )
                )
        return same


def save_durations(durations: dict[str, float], path: Path = DURATIONS) -> None:
    """Update the file with these tests' seconds (the others keep theirs): the tests
    that took ``LISTED_FROM_S`` or more, one a line, sorted for diffs."""
    merged = {**load_durations(path), **durations}
    kept = {nodeid: round(s, 1) for nodeid, s in sorted(merged.items()) if s >= LISTED_FROM_S}
    lines = ",\n".join(f"  {json.dumps(nodeid)}: {s}" for nodeid, s in kept.items())
    path.write_text("{\n" + lines + "\n}\n")
