"""Which conversations a report shows as threads, and which of their turns in full."""

from ragproof_core.present.threads import (
    conversation_turns,
    shown_threads,
    thread,
    thread_turns_in_full,
)

TURNS = conversation_turns(["s1", "c1#1", "c1#2", "c2#1", "s2"], [None, "c1", "c1", "c2", None])


def test_turns_are_grouped_by_conversation_in_dataset_order():
    assert TURNS == {"c1": ("c1#1", "c1#2"), "c2": ("c2#1",)}
    assert conversation_turns(["s1"], [None]) == {}


def test_a_wanted_turn_or_conversation_id_brings_its_thread_once():
    assert shown_threads(["s1", "c2#1", "c1", "c1#2"], TURNS) == {
        "c2": ("c2#1",),
        "c1": ("c1#1", "c1#2"),
    }
    assert shown_threads(["s1", "s2"], TURNS) == {}
    assert shown_threads(["c1#1"], {}) == {}


def test_a_long_thread_keeps_its_first_turns_and_every_wanted_one():
    ids = [f"c9#{t}" for t in range(1, 8)]
    assert thread_turns_in_full(ids, {"c9#6"}, 2) == ["c9#1", "c9#2", "c9#6"]
    assert thread_turns_in_full(ids[:2], set(), 20) == ids[:2]
    assert thread("c9", ids[:2], []) == {"id": "c9", "turns": ids[:2], "results": []}
