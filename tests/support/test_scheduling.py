"""The test scheduler's plan: groups stay whole, the heaviest unit goes first."""

from __future__ import annotations

from tests.support.scheduling import (
    UNMARKED_WEIGHT,
    WorkUnit,
    load_durations,
    plan_units,
    save_durations,
)

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


def test_saved_durations_keep_the_tests_of_a_second_or_more_and_load_back(tmp_path):
    path = tmp_path / "durations.json"
    save_durations({"b.py::slow": 12.345, "a.py::quick": 0.2, "a.py::one": 1.0}, path)
    assert load_durations(path) == {"a.py::one": 1.0, "b.py::slow": 12.3}
    assert load_durations(tmp_path / "missing.json") == {}
    # A later run updates the tests it ran and keeps the others.
    save_durations({"a.py::one": 0.5, "c.py::new": 3.0}, path)
    assert load_durations(path) == {"b.py::slow": 12.3, "c.py::new": 3.0}
