"""Scripted judge replies for `ragproof generate qa` tests, keyed on what the
request says (its slot, attempt and question), not on arrival order, so tests
stay exact under concurrency. Used with ``JudgeServer(responder=...)``."""

from __future__ import annotations

import json
from collections.abc import Callable, Container

from tests.support.judge_server import ReceivedRequest, chunk_topic, default_content


def request_fields(request: ReceivedRequest) -> dict[str, str]:
    """The named (non-chunk) data blocks: slot, attempt, question, answer."""
    return {b["name"]: b["text"] for b in request.blocks() if "id" not in b}


def is_repair(request: ReceivedRequest) -> bool:
    """The session's repair retry appends the bad reply and a correction request."""
    return len(request.body.get("messages", [])) > 2


def labelled_question(request: ReceivedRequest) -> str:
    """A question naming its slot and attempt, so a critique can tell them apart."""
    fields = request_fields(request)
    topic = " and ".join(chunk_topic(b["text"]) for b in request.blocks() if "id" in b)
    return f"What is said about {topic}? [{fields['slot']}, {fields['attempt']}]"


def scripted(
    *,
    reject: Container[str] = (),
    same_question: Container[str] = (),
    garbage: Container[str] = (),
    garbage_first_only: Container[str] = (),
    answerable: Container[str] = (),
) -> Callable[[ReceivedRequest], str]:
    """A responder writing ``labelled_question``s, where labels are "qa slot N, attempt A":

    - ``reject``: the critique of that label's question says not standalone;
    - ``same_question``: that label's question is "What colour is the kettle?";
    - ``garbage``: that label's generation reply is not JSON, repair included;
    - ``garbage_first_only``: not JSON at first, valid on the repair retry;
    - ``answerable``: the critique says answerable (otherwise: exactly when the
      proposed answer is non-empty, i.e. for qa questions).
    """

    def respond(request: ReceivedRequest) -> str:
        fields = request_fields(request)
        if request.prompt in ("generate_qa", "generate_unanswerable"):
            label = f"{fields['slot']}, {fields['attempt']}"
            if label in garbage or (label in garbage_first_only and not is_repair(request)):
                return "Sure! Here is a question: what is a kettle?"
            question = (
                "What colour is the kettle?"
                if label in same_question
                else labelled_question(request)
            )
            reply = {"question": question}
            if request.prompt == "generate_qa":
                reply["answer"] = f"The answer for {label}."
            return json.dumps(reply)
        if request.prompt == "critique_qa":
            question = fields["question"]
            label = question.rsplit("[", 1)[-1].rstrip("]")
            can_answer = bool(fields["answer"]) or label in answerable
            return json.dumps(
                {"standalone": label not in reject, "answerable": can_answer, "specific": True}
            )
        return default_content(request)

    return respond
