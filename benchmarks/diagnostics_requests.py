"""Claim diagnostics: what they add to a case's judge requests, against RAGChecker's shape.

200 qa cases (``--quick``: 20) built from ``data/corpus/passages.jsonl``: each
case's context is five passages, its expected answer the first two sentences of
the first passage, its answer the first sentence of the first and of the second
(a claim of the reference and one of noise). The local judge server
(``tests/support/judge_server.py``, real LiteLLM over real HTTP, no cache, 16 in
flight) answers every request; it reports no usage, so tokens are ragproof's own
estimate of each request actually sent (4 characters per token), the same for
every configuration:

1. combined mode, ``generation.groundedness``, ``completeness`` and
   ``answer_relevance``;
2. the same with the eight claim metrics of CONTRACT section 20 (one more part,
   ``claim_check``, in the case's one request);
3. RAGChecker's pipeline shape for the same diagnostics, beside configuration 1:
   claims extracted from the answer and from the reference (two requests), then
   one checking call per claim set (the answer's claims against the reference
   and the chunks, the reference's against the answer and the chunks): four
   requests a case, each check sent after its extraction's reply. Its
   instructions are the ``claim_check`` template's own steps, split the way that
   pipeline splits the work, so the figures compare the shape (what each request
   carries again), not two wordings;
4. the eight claim metrics alone in per_metric mode: one ``claim_check`` request
   a case, the like-for-like against RAGChecker's four.

``python -m benchmarks.diagnostics_requests [--quick]``
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks._common import REPO, Benchmark, Table, parse_args, publish
from ragproof_core.config.settings import RunSettings
from ragproof_core.judge.client import LiteLLMClient, flush_litellm, import_litellm
from ragproof_core.judge.cost import estimate_input_tokens
from ragproof_core.judge.prompts import (
    DEFAULT_DIRECTORY,
    MARKER_PREFIX,
    derive_fence,
    fenced_block,
    fenced_chunks,
)
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.metrics.diagnostics import CLAIM_METRICS
from ragproof_core.model import Answer, Case, CaseOutput, Chunk
from ragproof_core.run.evaluate import evaluate
from tests.support.judge_server import JudgeServer, ReceivedRequest, default_content, sentences

BENCHMARK = Benchmark(
    title="Claim diagnostics: requests and tokens against RAGChecker's shape",
    measures=(
        "200 qa cases (five corpus passages of context each), 16 in flight, combined mode, "
        "against the local judge server (real LiteLLM over real HTTP, no cache): requests "
        "and input tokens per case (ragproof's own 4-characters-per-token estimate of each "
        "request sent) for groundedness, completeness and answer relevance; the same with "
        "the eight claim metrics (one more part of the case's one request); and "
        "RAGChecker's pipeline shape for the same diagnostics beside the three (claims "
        "extracted from the answer and the reference, then one check per claim set: four "
        "requests a case, with the claim_check template's own instructions), and the eight "
        "alone in per_metric mode (one claim_check request a case)."
    ),
    target="the claim metrics add no request a case and fewer input tokens than RAGChecker's shape",
    order=76,
    in_run_all=False,
)

MODEL = "openai/judge-bench"
CONCURRENCY = 16
BASE = ("generation.groundedness", "generation.completeness", "generation.answer_relevance")
EXTRACT, CHECK = "rc_extract", "rc_check"


def _cases(count: int) -> tuple[list[Case], dict[str, CaseOutput]]:
    passages = [
        json.loads(line)
        for line in (REPO / "data/corpus/passages.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    cases, outputs = [], {}
    for i in range(count):
        chunks = tuple(
            Chunk(p["id"], p["text"]) for p in (passages[(i + j) % len(passages)] for j in range(5))
        )
        first, second = (sentences(c.text) for c in chunks[:2])
        case = Case(
            f"c{i:03d}",
            f"What does the reference say about {' '.join(first[0].split()[:6])}?",
            expected_answer=" ".join(first[:2]),
        )
        cases.append(case)
        answer = Answer(f"{first[0]} {second[0]}", retrieved_chunks=chunks)
        outputs[case.question] = CaseOutput(case.id, answer)
    return cases, outputs


class _Recorded:
    """The pipeline under test: each question's answer, as recorded."""

    def __init__(self, outputs: dict[str, CaseOutput]) -> None:
        self._outputs = outputs

    def answer(self, question: str) -> Answer:
        return self._outputs[question].answer


def _judge(url: str, mode: str = "combined") -> LiteLLMJudge:
    env = JudgeEnv(MODEL, url, mode=mode)
    client = LiteLLMClient(MODEL, url, timeout_s=60, max_attempts=2, backoff_base_s=0.01)
    return LiteLLMJudge(env, None, use_cache=False, concurrency=CONCURRENCY, client=client)


@dataclass(frozen=True)
class Figures:
    requests: int
    input_tokens: int


async def _ragproof(
    url: str, cases, outputs, metrics: Sequence[str], mode: str = "combined"
) -> Figures:
    judge = _judge(url, mode)
    settings = RunSettings(concurrency=CONCURRENCY, metrics=tuple(metrics))
    try:
        await evaluate(cases, _Recorded(outputs), settings, judge)
    finally:
        await flush_litellm()
    return Figures(judge.stats.requests, judge.stats.input_tokens)


# --- RAGChecker's shape -----------------------------------------------------------------------


def _steps() -> tuple[str, str]:
    """(extraction, checking) instructions: the claim_check template's own steps."""
    system = (DEFAULT_DIRECTORY / "claim_check.txt").read_text(encoding="utf-8")
    system = system.split("=== history ===", 1)[0]
    preamble, rest = system.split("Step 1:", 1)
    layout = preamble.split("How this request is laid out:", 1)[1]
    step1, rest = rest.split("Step 2:", 1)
    step2, rest = rest.split("Step 3:", 1)
    step3 = rest.split("Reply with", 1)[0]
    extract = (
        "You extract claims for a retrieval-augmented question answering system.\n\n"
        f"How this request is laid out:{layout}Step 1:{step1}"
        'Reply with one JSON object and nothing else: {"claims": ["<claim>"]}'
    )
    check = (
        "You check claims for a retrieval-augmented question answering system: whether the "
        "TEXT states each CLAIM, and which CONTEXT chunks support it.\n\n"
        f"How this request is laid out:{layout}Step 2:{step2}Step 3:{step3}"
        'Reply with one JSON object and nothing else: {"verdicts": [{"claim": 0, '
        '"in_text": true, "chunk_ids": ["<id>"]}]}'
    )
    return extract, check


def _messages(marker: str, instructions: str, blocks: dict[str, Any]) -> list[dict[str, str]]:
    texts = [t for v in blocks.values() for t in (v if isinstance(v, list) else [v])]
    flat = [t["text"] if isinstance(t, dict) else t for t in texts]
    fence = derive_fence(json.dumps(blocks, sort_keys=True), flat)
    parts = []
    for name, value in blocks.items():
        if name == "context":
            parts.append(fenced_chunks(fence, "chunk", value, "\n\n"))
        elif name == "claims":
            parts.extend(fenced_block(fence, f"claim index={i}", c) for i, c in enumerate(value))
        else:
            parts.append(fenced_block(fence, name, value))
    system = f"{MARKER_PREFIX}{marker}\n" + instructions.replace("{{fence}}", fence)
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


_CLAIM = re.compile(r"<<<BEGIN DATA-[0-9a-f]+ claim index=\d+>>>\n(.*?)\n<<<END", re.DOTALL)


def ragchecker_responder(request: ReceivedRequest) -> str:
    """The server's claims for the two RAGChecker requests (a claim per sentence, as its
    claim_check reply splits them); every other request as the server answers it."""
    if request.prompt == EXTRACT:
        text = next(b["text"] for b in request.blocks() if b["name"] == "text")
        return json.dumps({"claims": sentences(text)})
    if request.prompt == CHECK:
        claims = _CLAIM.findall(request.user)
        verdicts = [{"claim": i, "in_text": True, "chunk_ids": []} for i in range(len(claims))]
        return json.dumps({"verdicts": verdicts})
    return default_content(request)


async def _ragchecker(url: str, cases, outputs) -> Figures:
    extract, check = _steps()
    client = LiteLLMClient(MODEL, url, timeout_s=60, max_attempts=2, backoff_base_s=0.01)
    limit = asyncio.Semaphore(CONCURRENCY)
    sent: list[int] = []

    async def ask(marker: str, instructions: str, blocks: dict[str, Any]) -> dict[str, Any]:
        messages = _messages(marker, instructions, blocks)
        async with limit:
            reply = await client.complete(messages)
        sent.append(estimate_input_tokens(messages))
        return json.loads(reply.text)

    async def one(case: Case) -> None:
        answer = outputs[case.question].answer
        context = [{"id": c.id, "text": c.text} for c in answer.retrieved_chunks]

        async def side(text: str, other: str) -> None:
            found = await ask(EXTRACT, extract, {"question": case.question, "text": text})
            await ask(
                CHECK,
                check,
                {"claims": found["claims"], "text": other, "context": context},
            )

        await asyncio.gather(
            side(answer.text, case.expected_answer), side(case.expected_answer, answer.text)
        )

    try:
        await asyncio.gather(*(one(case) for case in cases))
    finally:
        await flush_litellm()
    return Figures(len(sent), sum(sent))


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-not-a-secret")
    cases, outputs = _cases(20 if args.quick else 200)
    n = len(cases)
    import_litellm()  # its seconds of import are no part of any configuration
    with JudgeServer(usage=None, responder=ragchecker_responder) as server:
        load = _load()
        base = asyncio.run(_ragproof(server.url, cases, outputs, BASE))
        assert base.requests == server.request_count
        server.reset()
        with_claims = asyncio.run(_ragproof(server.url, cases, outputs, (*BASE, *CLAIM_METRICS)))
        assert with_claims.requests == server.request_count
        server.reset()
        alone = asyncio.run(_ragproof(server.url, cases, outputs, CLAIM_METRICS, "per_metric"))
        assert alone.requests == server.request_count
        server.reset()
        shape = asyncio.run(_ragchecker(server.url, cases, outputs))
        assert shape.requests == server.request_count
    extra = with_claims.input_tokens - base.input_tokens
    ragchecker_total = Figures(
        base.requests + shape.requests, base.input_tokens + shape.input_tokens
    )

    def row(name: str, f: Figures) -> list[str]:
        return [
            name,
            f"{f.requests}",
            f"{f.requests / n:.2f}",
            f"{f.input_tokens:,}",
            f"{f.input_tokens / n:,.0f}",
        ]

    table = Table(
        f"Claim diagnostics: {n} cases, 16 in flight, combined mode, local judge server "
        f"(load {load})",
        ["configuration", "requests", "requests/case", "input tokens", "input tokens/case"],
        [
            row("groundedness, completeness, answer relevance", base),
            row("the same + the 8 claim metrics (one request a case)", with_claims),
            row("the 8 claim metrics alone, per_metric mode (claim_check)", alone),
            row("RAGChecker's shape for the 8 (extract x2, check x2), alone", shape),
            row("the three + RAGChecker's shape", ragchecker_total),
        ],
        [
            f"The claim metrics add {extra / n:,.0f} input tokens a case "
            f"({with_claims.input_tokens / base.input_tokens:.2f}x the three metrics' request) "
            "and no request; RAGChecker's shape adds "
            f"{shape.requests / n:.0f} requests and {shape.input_tokens / n:,.0f} input tokens "
            f"a case: {shape.input_tokens / extra:.2f}x the tokens ragproof's part adds, and "
            f"{ragchecker_total.input_tokens / with_claims.input_tokens:.2f}x ragproof's total. "
            f"Asked alone, the eight cost one claim_check request a case, "
            f"{alone.input_tokens / n:,.0f} input tokens: RAGChecker's shape is "
            f"{shape.requests / alone.requests:.0f}x the requests and "
            f"{shape.input_tokens / alone.input_tokens:.2f}x the input tokens.",
            "Tokens are 4 characters each, of every request actually sent (the server reports "
            "no usage); RAGChecker's shape sends the context in both checks and the question "
            "in both extractions, and each check waits for its extraction.",
            "RAGChecker's own checker goes further than this shape: it checks the claims "
            "against each retrieved chunk, a request per chunk; the issue's shape (one check "
            "per claim set) is the cheaper reading of it.",
        ],
    )
    met = with_claims.requests == base.requests and extra < shape.input_tokens
    headline = (
        f"+{extra / n:,.0f} input tokens and +0 requests a case; RAGChecker's shape "
        f"+{shape.input_tokens / n:,.0f} tokens and +{shape.requests / n:.0f} requests "
        f"({'met' if met else 'MISSED'})"
    )
    publish([table], args.emit, headline)


if __name__ == "__main__":
    main()
