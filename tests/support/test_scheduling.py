"""The test scheduler's plan: groups stay whole, the heaviest unit goes first."""

from __future__ import annotations

from tests.support.scheduling import UNMARKED_WEIGHT, WorkUnit, plan_units

COLLECTION = ["a.py::one", "a.py::two", "b.py::slow", "c.py::x", "c.py::y", "d.py::quick"]


def test_a_group_is_one_unit_weighing_its_tests_and_units_go_heaviest_first():
    rows = [
        ["a.py::one", None, UNMARKED_WEIGHT],
        ["a.py::two", None, UNMARKED_WEIGHT],
        ["b.py::slow", None, 3.0],
        ["c.py::x", "c", 1.0],
        ["c.py::y", "c", 1.0],
        ["d.py::quick", None, UNMARKED_WEIGHT],
    ]
    assert plan_units(COLLECTION, rows) == [
        WorkUnit((2,), 3.0),
        WorkUnit((3, 4), 2.0),
        # Equal weights keep the collection's order.
        WorkUnit((0,), UNMARKED_WEIGHT),
        WorkUnit((1,), UNMARKED_WEIGHT),
        WorkUnit((5,), UNMARKED_WEIGHT),
    ]


def test_a_group_split_by_other_tests_still_runs_together_in_collection_order():
    rows = [[nodeid, "g" if nodeid.startswith(("a", "d")) else None, 1.0] for nodeid in COLLECTION]
    assert plan_units(COLLECTION, rows)[0] == WorkUnit((0, 1, 5), 3.0)


def test_tests_the_workers_did_not_describe_are_units_of_their_own():
    units = plan_units(COLLECTION, [])
    assert units == [WorkUnit((i,), UNMARKED_WEIGHT) for i in range(len(COLLECTION))]
