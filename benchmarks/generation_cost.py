"""What `ragproof generate qa` costs per written case, in judge requests and tokens.

Runs the real generation loop (real LiteLLM over HTTP) against the local judge
server on the demo corpus (``data/corpus/passages.jsonl``), three ways:

1. the server's usage figures (it reports a fixed 100 input / 20 output tokens
   per reply): requests per case are exact, tokens are the server's;
2. the server reporting no usage, so the judge session falls back to 4
   characters per token on the real rendered prompts and replies: the token
   figure a real model would roughly bill, for the demo corpus;
3. as 2, with the critique rejecting every first attempt of every fourth slot
   (one retry each), to show what rejections add.

``python -m benchmarks.generation_cost [--count N] [--unanswerable M]``
prints a Markdown table. A figure, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path

from benchmarks._common import REPO, Benchmark, Table, publish
from ragproof_core.generate.corpus import load_corpus
from ragproof_core.generate.qa import GenerationPlan, generate_questions
from ragproof_core.judge.client import flush_litellm
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.settings import JudgeEnv
from tests.support.generation import request_fields
from tests.support.judge_server import JudgeServer, ReceivedRequest, default_content

BENCHMARK = Benchmark(
    title="What `generate qa` costs per written case",
    measures=(
        "The real generation loop (LiteLLM over HTTP) against the local judge server on "
        "the demo corpus: requests and tokens per written case with the server's usage "
        "figures, with none (4 characters per token on the real prompts), and with one "
        "slot in four rejected once by the critique."
    ),
    target="-",
    order=190,
    in_run_all=False,
)

CORPUS = REPO / "data" / "corpus" / "passages.jsonl"


def _reject_every_fourth(request: ReceivedRequest) -> str:
    """Default replies, but slots 4, 8, ... have their first question rejected."""
    if request.prompt == "critique_qa":
        question = request_fields(request)["question"]
        if question.endswith("#reject"):
            return json.dumps({"standalone": False, "answerable": True, "specific": True})
    reply = default_content(request)
    if request.prompt in ("generate_qa", "generate_unanswerable"):
        fields = request_fields(request)
        number = int(fields["slot"].rsplit(" ", 1)[1])
        if number % 4 == 0 and fields["attempt"] == "attempt 1":
            data = json.loads(reply)
            data["question"] += " #reject"
            reply = json.dumps(data)
    return reply


def measure(label: str, plan: GenerationPlan, usage, responder) -> list[str]:
    chunks = load_corpus(CORPUS)
    with (
        JudgeServer(usage=usage, responder=responder) as server,
        tempfile.TemporaryDirectory() as d,
    ):
        env = JudgeEnv(model="openai/judge-bench", api_base=server.url)
        judge = make_judge(env, Path(d) / "cache.sqlite")

        async def go():
            try:
                return await generate_questions(chunks, plan, judge)
            finally:
                await flush_litellm()

        outcome = asyncio.run(go())
        judge.close()
        stats = judge.stats
    cases = len(outcome.kept)
    return [
        label,
        str(cases),
        str(stats.requests),
        f"{stats.requests / cases:.2f}",
        f"{stats.input_tokens / cases:,.0f}",
        f"{stats.output_tokens / cases:,.0f}",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--unanswerable", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="the same: it takes seconds")
    parser.add_argument("--emit", type=Path, help="also write the tables as JSON here (run_all)")
    args = parser.parse_args(argv)
    os.environ["OPENAI_API_KEY"] = "dummy"  # LiteLLM's openai provider wants one
    plan = GenerationPlan(count=args.count, unanswerable=args.unanswerable, seed=0)
    rows = [
        measure("server usage (fixed 100 in / 20 out per reply)", plan, (100, 20), default_content),
        measure("no usage reported: 4 chars per token", plan, None, default_content),
        measure("4 chars per token, 1 slot in 4 rejected once", plan, None, _reject_every_fourth),
    ]
    table = Table(
        f"generate qa on the demo corpus: {args.count} qa + {args.unanswerable} unanswerable",
        ["measured with", "cases", "requests", "requests/case", "input tok/case",
         "output tok/case"],
        rows,
        notes=[
            "Every kept case costs one generation and one critique request; a rejected or "
            "duplicate question adds its own generation (and critique) request.",
            "4-chars-per-token figures are the rendered prompts (instructions + fenced chunks) "
            "and the test server's short replies; a real model's replies are longer.",
        ],
    )  # fmt: skip
    publish([table], args.emit)


if __name__ == "__main__":
    main()
