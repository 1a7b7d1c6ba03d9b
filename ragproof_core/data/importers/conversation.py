"""A chat transcript as a ragproof conversation (CONTRACT section 16) and its recording.

DeepEval's conversational test cases and RAGAS's multi-turn samples are both
lists of messages. Each user message starts a turn (its question); the
assistant messages after it, up to the next user message, are that turn's
reply: the last one's content is the answer, and the retrieved contexts of all
of them, in order, are the turn's retrieved chunks (ids ``CASE_ID#T:ctx-I``).
Other messages (RAGAS tool messages) are not part of a turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.data.importers.writer import context_chunks
from ragproof_core.model import turn_id


@dataclass(frozen=True)
class ChatMessage:
    """One source message: ``role`` is ``user``, ``assistant`` or ``other`` (ignored)."""

    role: str
    content: str
    contexts: list[str] | None = None


@dataclass
class _Turn:
    question: str
    answer: str | None = None
    contexts: list[str] | None = None
    replies: int = 0


def conversation_rows(
    case_id: str,
    messages: Sequence[ChatMessage],
    key: str,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The conversation's dataset line and recorded line (None: no turn was answered).

    ``key`` names the message list in errors (``'turns' item 2: ...``, 0-based
    as the source list). Raises ValueError: no user message, an assistant
    message before the first user message, or two user messages in a row (the
    first would be a turn without a reply in the middle of the conversation).
    """
    turns: list[_Turn] = []
    for index, message in enumerate(messages):
        if message.role == "user":
            if turns and turns[-1].replies == 0:
                raise ValueError(
                    f"{key!r} item {index}: two user messages in a row "
                    f"(turn {len(turns)} has no reply)"
                )
            turns.append(_Turn(message.content))
        elif message.role == "assistant":
            if not turns:
                raise ValueError(
                    f"{key!r} item {index}: an assistant message before the first user message"
                )
            turn = turns[-1]
            turn.replies += 1
            turn.answer = message.content
            if message.contexts is not None:
                turn.contexts = (turn.contexts or []) + message.contexts
    if not turns:
        raise ValueError(f"{key!r} has no user message")
    case: dict[str, Any] = {
        "id": case_id,
        "kind": "conversation",
        "turns": [{"question": turn.question} for turn in turns],
    }
    if metadata:
        case["metadata"] = dict(metadata)
    answered = [turn for turn in turns if turn.replies]
    if not answered:
        return case, None
    lines = []
    for number, turn in enumerate(answered, start=1):
        line: dict[str, Any] = {}
        if turn.contexts is not None:
            line["retrieve"] = context_chunks(turn_id(case_id, number), turn.contexts)
        line["answer"] = {"text": turn.answer}
        lines.append(line)
    return case, {"case_id": case_id, "turns": lines}
