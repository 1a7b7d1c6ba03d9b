"""RAGAS's faithfulness over the judged-command benchmark's cases (issue 24, item 5).

Two halves, one per process:

- ``ragas_content(request)``: the judge server's reply to RAGAS's own
  faithfulness prompts, in the JSON its output models parse
  (``StatementGeneratorOutput``: one statement per sentence of the answer;
  ``NLIStatementOutput``: each statement supported unless it contains the word
  UNSUPPORTED, the rule the server's groundedness reply follows). None for any
  other prompt, which keeps the server's default reply. The benchmark's server
  process (``benchmarks/_judge_process.py``) answers with it.
- ``python -m benchmarks._ragas DATASET OUTPUTS``: the child that scores
  ``faithfulness`` on every case with RAGAS's ``evaluate``, its LLM a LangChain
  ``ChatOpenAI`` pointed at ``RAGPROOF_JUDGE_API_BASE``, 16 requests in flight
  (``RunConfig(max_workers=16)``); prints ``{"scored", "loop_s"}``.
  It needs only the standard library and ``ragas`` (faithfulness needs no
  embeddings), so it runs in any interpreter where ``ragas`` imports: RAGAS
  pins openai and LangChain versions of its own, so the benchmark may run it
  in a virtualenv of its own (``RAGAS_PYTHON``, docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

CONCURRENCY = 16
# PydanticPrompt.to_string ends every prompt with the input as indented JSON.
_INPUT = re.compile(
    r"\nNow perform the same with the following input\ninput: (\{.*\})\nOutput: $", re.S
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _statements(answer: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(answer.strip()) if s]


def ragas_content(request: Any) -> str | None:
    """RAGAS's reply format for a faithfulness prompt in ``request`` (a judge server
    ``ReceivedRequest``), or None when the request is not one."""
    prompt = "\n".join(m.get("content") or "" for m in request.body.get("messages", []))
    found = _INPUT.search(prompt)
    if found is None:
        return None
    given = json.loads(found.group(1))
    if {"question", "answer"} <= given.keys():
        return json.dumps({"statements": _statements(given["answer"])})
    if {"context", "statements"} <= given.keys():
        verdicts = [
            {
                "statement": statement,
                "reason": "stated in the context" if supported else "not in the context",
                "verdict": int(supported),
            }
            for statement in given["statements"]
            for supported in ["UNSUPPORTED" not in statement]
        ]
        return json.dumps({"statements": verdicts})
    return None


def _samples(dataset: str, outputs: str) -> list[dict[str, Any]]:
    """RAGAS's single-turn samples: question, answer and the retrieved chunks' texts."""
    with open(dataset, encoding="utf-8") as cases_file:
        questions = {c["id"]: c["question"] for c in map(json.loads, cases_file)}
    samples = []
    with open(outputs, encoding="utf-8") as outputs_file:
        for output in map(json.loads, outputs_file):
            samples.append(
                {
                    "user_input": questions[output["case_id"]],
                    "response": output["answer"]["text"],
                    "retrieved_contexts": [chunk["text"] for chunk in output["retrieve"]],
                }
            )
    return samples


def faithfulness_loop(dataset: str, outputs: str) -> dict[str, Any]:
    """RAGAS's faithfulness on every case, as its documentation has a user write it."""
    # Not a dependency of ragproof: only this child imports it.
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, evaluate
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import faithfulness
    from ragas.run_config import RunConfig

    started = time.perf_counter()
    llm = LangchainLLMWrapper(
        ChatOpenAI(
            model="judge-test",
            base_url=os.environ["RAGPROOF_JUDGE_API_BASE"],
            api_key="dummy",
            max_retries=0,
        )
    )
    result = evaluate(
        EvaluationDataset.from_list(_samples(dataset, outputs)),
        metrics=[faithfulness],
        llm=llm,
        run_config=RunConfig(max_workers=CONCURRENCY, max_retries=0, timeout=120),
        show_progress=False,
        raise_exceptions=True,
    )
    scores = [row["faithfulness"] for row in result.scores]
    scored = sum(1 for value in scores if value == value)  # NaN: not scored
    return {"scored": scored, "loop_s": time.perf_counter() - started}


if __name__ == "__main__":
    print(json.dumps(faithfulness_loop(*sys.argv[1:3])))
