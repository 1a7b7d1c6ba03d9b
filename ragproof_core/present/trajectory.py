"""A case's trajectory as the report shows it (CONTRACT section 17): each step with
its query or arguments, the chunks of each hop with that hop's gold ones marked, and
which expected tool call each made call matched (the metrics' own maximal matching).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ragproof_core.metrics.agent import tool_matching
from ragproof_core.model import Answer, Case, Chunk, RetrieveStep, ToolStep

ClipText = Callable[[str | None], Any]


def trajectory(
    case: Case,
    answer: Answer | None,
    *,
    match_documents: bool,
    clip: ClipText,
    chunks_shown: int,
) -> dict[str, Any] | None:
    """The trajectory of one case, or None when the answer reported no steps."""
    if answer is None or answer.steps is None:
        return None
    hops = case.expected_hops or ()
    expected = case.expected_tools or ()
    made = answer.tool_calls
    pairs = tool_matching(expected, made) if expected else {}
    expected_of_made = {made_index: exp_index for exp_index, made_index in pairs.items()}
    steps: list[dict[str, Any]] = []
    hop = tool = 0
    for number, step in enumerate(answer.steps, start=1):
        if isinstance(step, RetrieveStep):
            gold = set(hops[hop]) if hop < len(hops) else set()
            steps.append(
                {
                    "n": number,
                    "type": "retrieve",
                    "hop": hop + 1,
                    "query": clip(step.query),
                    "gold": sorted(gold),
                    "chunks": [
                        _chunk(c, gold, match_documents, clip) for c in step.chunks[:chunks_shown]
                    ],
                    "chunks_total": len(step.chunks),
                }
            )
            hop += 1
        elif isinstance(step, ToolStep):
            matched = expected_of_made.get(tool)
            steps.append(
                {
                    "n": number,
                    "type": "tool",
                    "name": step.name,
                    "arguments": clip(json.dumps(step.arguments, ensure_ascii=False)),
                    "output": clip(step.output),
                    "matches_expected": None if matched is None else matched + 1,
                }
            )
            tool += 1
    tool_steps = [s["n"] for s in steps if s["type"] == "tool"]
    return {
        "steps": steps,
        "tool_match": case.tool_match.value if case.expected_tools is not None else None,
        "expected_tools": [
            {
                "name": call.name,
                "arguments": None
                if call.arguments is None
                else json.dumps(call.arguments, ensure_ascii=False),
                "matched_step": None if i not in pairs else tool_steps[pairs[i]],
            }
            for i, call in enumerate(expected)
        ],
        "missing_hops": [i + 1 for i in range(hop, len(hops))],
    }


def _chunk(chunk: Chunk, gold: set[str], match_documents: bool, clip: ClipText) -> dict:
    key = chunk.document_id if match_documents else chunk.id
    return {"id": chunk.id, "gold": key in gold, "text": clip(chunk.text)}
