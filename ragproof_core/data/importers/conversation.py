"""A chat transcript as a ragproof conversation (CONTRACT section 16) and its recording.

DeepEval's conversational test cases and RAGAS's multi-turn samples are both
lists of messages. Each user message starts a turn (its question); the
assistant messages after it, up to the next user message, are that turn's
reply: the last one's content is the answer, and the retrieved contexts of all
of them, in order, are the turn's retrieved chunks (ids ``CASE_ID#T:ctx-I``).
Other messages (RAGAS tool messages) are not part of a turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.data.importers.reading import json_type, string_list
from ragproof_core.data.importers.writer import context_chunks
from ragproof_core.model import turn_id


@dataclass(frozen=True)
class ChatMessage:
    """One source message: ``role`` is ``user``, ``assistant`` or ``other`` (ignored)."""

    role: str
    content: str
    contexts: list[str] | None = None


def chat_message(
    message: Any,
    where: str,
    role_key: str,
    roles: Mapping[str, str],
    contexts_key: str | None = None,
) -> ChatMessage:
    """A source message as a ``ChatMessage``; raises ValueError starting with ``where``.

    ``roles`` maps the source's ``role_key`` values to ``user``, ``assistant``
    or ``other``; ``contexts_key`` names the message's list of retrieved
    contexts, if the format has one.
    """
    if not isinstance(message, dict):
        raise ValueError(f"{where}: expected a JSON object, got {json_type(message)}")
    kind, content = message.get(role_key), message.get("content")
    if kind not in roles:
        names = [repr(name) for name in roles]
        allowed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        raise ValueError(f"{where}: {role_key!r} must be {allowed}, got {json.dumps(kind)}")
    if not isinstance(content, str):
        raise ValueError(f"{where}: 'content' must be a string, got {json_type(content)}")
    if roles[kind] == "user" and not content.strip():
        raise ValueError(f"{where}: a {kind} message's 'content' must not be empty")
    contexts = None
    if contexts_key is not None:
        try:
            contexts = string_list(message.get(contexts_key), contexts_key)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return ChatMessage(roles[kind], content, contexts)


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
