"""A conversation's history as the pipeline under test receives it (CONTRACT section 16).

An adapter opts in to conversations by accepting the keyword argument
``history`` in ``answer`` (and in ``retrieve`` or the case-aware ``run_case``
hook): a list of ``{"role": "user" | "assistant", "content": str}`` messages
holding the earlier turns only, user and assistant alternating, the
adapter's own earlier answers included. The current question is never part
of it. A conversation given to an adapter that does not accept ``history``
fails in every turn (``HISTORY_REFUSED``); a turn that fails ends its
conversation (``EARLIER_TURN_FAILED`` for the turns after it).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ragproof_core.model import Answer, Case, CaseOutput, Message

HISTORY_REFUSED = "adapter does not accept history"
EARLIER_TURN_FAILED = "an earlier turn failed"


def accepts_history(fn: Any) -> bool:
    """Whether an adapter method takes the keyword argument ``history``: a parameter of
    that name (not positional-only), or ``**kwargs``."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return False
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == "history" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in parameters
    )


def history_dicts(history: tuple[Message, ...]) -> list[dict[str, str]]:
    """The history as the adapter receives it: a fresh list of plain dicts per call, so an
    adapter that edits its argument changes nothing ragproof keeps."""
    return [message.to_dict() for message in history]


def after_turn(
    history: tuple[Message, ...], question: str, answer: Answer | None
) -> tuple[Message, ...]:
    """The history of the next turn: this one's, then the question and the pipeline's
    answer (empty text for a turn that retrieved without answering)."""
    reply = "" if answer is None else answer.text
    return (*history, Message("user", question), Message("assistant", reply))


def stored_histories(
    cases: Iterable[Case], outputs: Mapping[str, CaseOutput]
) -> dict[str, tuple[Message, ...]]:
    """{turn's case id: its history} of a stored run, rebuilt as the runner built it
    (``after_turn``) from the dataset's questions and the stored answers, which is what
    the turn's judge prompts carried; the store keeps no history of its own. ``cases``
    in dataset order (a conversation's turns next to each other, in order); a turn after
    a failed or missing one never ran and gets none. A conversation's whole exchange is
    ``after_turn`` of its last turn's history."""
    histories: dict[str, tuple[Message, ...]] = {}
    running: dict[str, tuple[Message, ...] | None] = {}
    for case in cases:
        turn = case.turn
        if turn is None:
            continue
        history = () if turn.first else running.get(turn.conversation_id)
        if history is None:
            continue
        histories[case.id] = history
        output = outputs.get(case.id)
        running[turn.conversation_id] = (
            None
            if output is None or output.failed
            else after_turn(history, case.question, output.answer)
        )
    return histories


def with_stored_histories(cases: Sequence[Case], outputs: Sequence[CaseOutput]) -> list[CaseOutput]:
    """A stored run's outputs with each turn's history (``stored_histories``) set, so a
    judge question asked of them again is the one the run asked."""
    histories = stored_histories(cases, {o.case_id: o for o in outputs})
    return [
        o if o.case_id not in histories else replace(o, history=histories[o.case_id])
        for o in outputs
    ]
