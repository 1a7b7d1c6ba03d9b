"""A LangChain agent for the steps tests: a tool-calling loop over LangChain's own
``GenericFakeChatModel``, a real tool and the real retriever of langchain_app.

The model is scripted (no network): it asks ``search`` for "capital of France",
then the tool ``read_passage`` for passage d1, then ``search`` again with a
rewritten query, then answers. ``search`` runs the retriever (a retriever run:
a retrieve step); ``read_passage`` is a LangChain tool (a tool run: a tool step).
The loop passes its config on, so the adapter's callback sees every nested run.
"""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool

from tests.support.frameworks.corpus import PASSAGES
from tests.support.frameworks.langchain_app import build_retriever

BY_SOURCE = {meta.get("source_id"): text for _, text, meta in PASSAGES}
ANSWER = "Paris is the capital of France [d1]."


@tool
def read_passage(source_id: str, include_title: bool = False) -> str:
    """The full text of one passage, by its source id."""
    return BY_SOURCE.get(source_id, "no such passage")


def script() -> list[AIMessage]:
    return [
        AIMessage("", tool_calls=[_call("search", {"query": "capital of France"}, "1")]),
        AIMessage(
            "",
            tool_calls=[_call("read_passage", {"source_id": "d1", "include_title": True}, "2")],
        ),
        AIMessage("", tool_calls=[_call("search", {"query": "Paris France capital city"}, "3")]),
        AIMessage(ANSWER),
    ]


def _call(name: str, args: dict, call_id: str) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def build_agent():
    """The agent runnable; its output is {"answer": str}."""
    model = GenericFakeChatModel(messages=iter(script()))
    retriever = build_retriever()

    def run(question: str, config: RunnableConfig) -> dict:
        messages = [HumanMessage(question)]
        while True:
            reply = model.invoke(messages, config)
            messages.append(reply)
            if not reply.tool_calls:
                return {"answer": reply.content}
            for call in reply.tool_calls:
                if call["name"] == "search":
                    docs = retriever.invoke(call["args"]["query"], config)
                    content = "\n".join(doc.page_content for doc in docs)
                else:
                    content = read_passage.invoke(call["args"], config)
                messages.append(ToolMessage(content, tool_call_id=call["id"]))

    return RunnableLambda(run)
