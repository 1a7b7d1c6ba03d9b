"""Conversations as the report shows them (CONTRACT section 16): a thread of turns.

A conversation's turns ``c1#1`` ... are cases like any other; the report also embeds,
for each conversation one of whose turns (or whose own ``conversation.*`` result) it
shows in full, the whole thread: its turn ids in order, and which of them carry full
text, so a worst turn can be read with the turns before and after it. The number of
turns embedded in full per conversation is bounded, as every other text is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def conversation_turns(
    case_ids: Sequence[str], conversation_ids: Sequence[str | None]
) -> dict[str, tuple[str, ...]]:
    """Each conversation's turn ids in dataset order, from the dataset's two columns."""
    turns: dict[str, list[str]] = {}
    for case_id, conversation in zip(case_ids, conversation_ids, strict=True):
        if conversation is not None:
            turns.setdefault(conversation, []).append(case_id)
    return {conversation: tuple(ids) for conversation, ids in turns.items()}


def shown_threads(
    wanted: Iterable[str], turns: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """The conversations a report shows as threads: those with a turn, or their own
    result, among the ``wanted`` cases; in the order first met."""
    if not turns:
        return {}
    conversation_of = {turn: conversation for conversation, ids in turns.items() for turn in ids}
    shown: dict[str, tuple[str, ...]] = {}
    for case_id in wanted:
        conversation = case_id if case_id in turns else conversation_of.get(case_id)
        if conversation is not None and conversation not in shown:
            shown[conversation] = turns[conversation]
    return shown


def thread_turns_in_full(turn_ids: Sequence[str], wanted: set[str], limit: int) -> list[str]:
    """The turns of one thread embedded in full: the first ``limit`` and every turn
    already wanted for itself (a worst turn beyond the limit is never left out)."""
    return [t for i, t in enumerate(turn_ids) if i < limit or t in wanted]


def thread(
    conversation_id: str, turn_ids: Sequence[str], own_results: list[dict[str, Any]]
) -> dict[str, Any]:
    """One conversation's thread: its turns in order and its own results (its
    ``conversation.*`` metrics, stored under its id)."""
    return {"id": conversation_id, "turns": list(turn_ids), "results": own_results}
