"""Judge modes: what combined mode saves, and whether the two modes agree.

1. The demo dataset (``data/demo/cases.jsonl``, 77 cases, the shipped
   ``DemoRAG`` adapter) evaluated twice against the local judge server
   (``tests/support/judge_server.py``, real LiteLLM over real HTTP, no cache):
   once per_metric, once combined. Requests and input tokens per case, and
   combined / per_metric ratios (target: input tokens <= 0.4x). The server
   reports no usage, so tokens are ragproof's own estimate of each request
   actually sent (4 characters per token), the same for both modes.
2. The combined calibration fixtures (``ragproof_core/calibration/fixtures/combined.jsonl``)
   judged in both modes: the share of (fixture, prompt) scores that are equal.
   The local server answers deterministically from the request, so this
   checks that both modes ask the same questions of the same material and
   score the replies alike; with a real model it measures how much asking
   everything at once changes the verdicts.

``python -m benchmarks.judge_modes``
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import Benchmark, Table, publish, verdict
from ragproof_core.adapters.loading import load_adapter
from ragproof_core.calibration.calibrate_combined import PROMPT_METRICS, load_combined_fixtures
from ragproof_core.config.settings import DEMO_ADAPTER, RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.judge.client import LiteLLMClient, flush_litellm
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.run.evaluate import Selection, evaluate, judged_results
from tests.support.judge_server import JudgeServer

BENCHMARK = Benchmark(
    title="Judge modes: what combined mode saves",
    measures=(
        "The demo dataset (77 cases, the shipped `DemoRAG` adapter) evaluated per_metric "
        "and combined against the local judge server (real LiteLLM over real HTTP, no "
        "cache): requests and input tokens per case (ragproof's own "
        "4-characters-per-token estimate of each request sent); then the combined "
        "calibration fixtures judged in both modes, the share of equal scores."
    ),
    target="combined mode's input tokens <= 0.4x per_metric's",
    order=75,
    in_run_all=False,
)

DATASET = "data/demo/cases.jsonl"
MODEL = "openai/judge-bench"
TARGET_TOKEN_RATIO = 0.4


def _judge(url: str, mode: str) -> LiteLLMJudge:
    env = JudgeEnv(MODEL, url, mode=mode)
    client = LiteLLMClient(MODEL, url, timeout_s=30, max_attempts=2, backoff_base_s=0.01)
    return LiteLLMJudge(env, None, use_cache=False, concurrency=16, client=client)


async def _evaluate(judge: LiteLLMJudge, cases, settings: RunSettings):
    try:
        return await evaluate(cases, load_adapter(DEMO_ADAPTER, {}), settings, judge)
    finally:
        await flush_litellm()


async def _fixture_scores(judge: LiteLLMJudge) -> dict[tuple[str, str], tuple[str, float | None]]:
    """(fixture id, metric) -> (status, value) for every human-scored prompt of each fixture."""
    out: dict[tuple[str, str], tuple[str, float | None]] = {}

    async def one(fixture) -> None:
        names = tuple(PROMPT_METRICS[p] for p in fixture.human_scores)
        selection = Selection(names)
        results = await judged_results(
            fixture.case, fixture.output, judge, lambda stop: "stopped", selection
        )
        for result in results:
            out[(fixture.id, result.metric)] = (result.status.value, result.value)

    try:
        await asyncio.gather(*(one(f) for f in load_combined_fixtures()))
    finally:
        await flush_litellm()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the same: it takes seconds")
    parser.add_argument("--emit", type=Path, help="also write the tables as JSON here (run_all)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-not-a-secret")
    cases = load_dataset(DATASET)
    settings = RunSettings()
    figures: dict[str, tuple[int, int, int]] = {}
    with JudgeServer(usage=None) as server:
        for mode in ("per_metric", "combined"):
            server.reset()
            judge = _judge(server.url, mode)
            evaluation = asyncio.run(_evaluate(judge, cases, settings))
            stats = judge.stats
            assert stats.requests == server.request_count
            figures[mode] = (stats.requests, stats.input_tokens, len(evaluation.outputs))
            scored = [(r.case_id, r.metric, r.status.value, r.value) for r in evaluation.results]
            figures[mode + "/results"] = scored  # type: ignore[assignment]

        scores = {}
        for mode in ("per_metric", "combined"):
            server.reset()
            scores[mode] = asyncio.run(_fixture_scores(_judge(server.url, mode)))
            scores[mode + "/requests"] = server.request_count

    rows = []
    for mode in ("per_metric", "combined"):
        requests, tokens, n = figures[mode]
        rows.append([mode, str(requests), f"{requests / n:.2f}", str(tokens), f"{tokens / n:.0f}"])
    (req_p, tok_p, n), (req_c, tok_c, _) = figures["per_metric"], figures["combined"]
    ratio = tok_c / tok_p
    same = figures["per_metric/results"] == figures["combined/results"]
    rows.append(
        [
            "combined / per_metric",
            f"{req_c / req_p:.3f}x",
            "-",
            f"{ratio:.3f}x: {verdict(ratio <= TARGET_TOKEN_RATIO)}",
            "-",
        ]
    )
    modes = Table(
        f"Judge modes on {DATASET} ({n} cases, local judge server)",
        ["mode", "requests", "requests/case", "input tokens", "input tokens/case"],
        rows,
        [
            f"Target: combined mode's input tokens <= {TARGET_TOKEN_RATIO}x per_metric's.",
            f"Per-case results identical in both modes: {same}.",
        ],
    )
    keys = sorted(scores["per_metric"])
    agree = sum(scores["per_metric"][k] == scores["combined"][k] for k in keys)
    agreement = Table(
        "Mode agreement on the combined fixtures",
        ["(fixture, prompt) scores", "equal", "requests per_metric", "requests combined"],
        [
            [
                str(len(keys)),
                f"{agree} ({agree / len(keys):.1%})",
                str(scores["per_metric/requests"]),
                str(scores["combined/requests"]),
            ]
        ],
        [
            "The local server's verdicts are a deterministic function of the material asked "
            "about, so this agreement shows both modes ask about the same material and score "
            "alike; a real judge model's agreement is measured with `ragproof calibrate` in "
            "each mode (RAGPROOF_JUDGE_MODE or --mode)."
        ],
    )
    publish(
        [modes, agreement],
        args.emit,
        headline=f"combined mode's input tokens {ratio:.3f}x per_metric's",
    )
    return 0 if ratio <= TARGET_TOKEN_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
