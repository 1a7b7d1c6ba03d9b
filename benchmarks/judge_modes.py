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

from ragproof_core.adapters.loading import load_adapter
from ragproof_core.calibration.calibrate_combined import PROMPT_METRICS, load_combined_fixtures
from ragproof_core.config.settings import DEMO_ADAPTER, RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.judge.client import LiteLLMClient, flush_litellm
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.run.evaluate import Selection, evaluate, judged_results
from tests.support.judge_server import JudgeServer

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
    parser.parse_args(argv)
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

    print(f"## Judge modes on {DATASET} ({figures['per_metric'][2]} cases, local judge server)\n")
    print("| mode | requests | requests/case | input tokens | input tokens/case |")
    print("|---|---|---|---|---|")
    for mode in ("per_metric", "combined"):
        requests, tokens, n = figures[mode]
        print(f"| {mode} | {requests} | {requests / n:.2f} | {tokens} | {tokens / n:.0f} |")
    (req_p, tok_p, _), (req_c, tok_c, _) = figures["per_metric"], figures["combined"]
    ratio = tok_c / tok_p
    met = "met" if ratio <= TARGET_TOKEN_RATIO else "MISSED"
    print(
        f"\ncombined / per_metric: requests {req_c / req_p:.3f}x, input tokens {ratio:.3f}x "
        f"(target <= {TARGET_TOKEN_RATIO}x: {met})"
    )
    same = figures["per_metric/results"] == figures["combined/results"]
    print(f"per-case results identical in both modes: {same}")

    keys = sorted(scores["per_metric"])
    agree = sum(scores["per_metric"][k] == scores["combined"][k] for k in keys)
    print(
        f"\n## Mode agreement on the combined fixtures\n\n"
        f"{agree} of {len(keys)} (fixture, prompt) scores equal ({agree / len(keys):.1%}); "
        f"requests: per_metric {scores['per_metric/requests']}, "
        f"combined {scores['combined/requests']}"
    )
    print(
        "\nThe local server's verdicts are a deterministic function of the material asked "
        "about, so this agreement shows both modes ask about the same material and score "
        "alike; a real judge model's agreement is measured with `ragproof calibrate` in "
        "each mode (RAGPROOF_JUDGE_MODE or --mode)."
    )
    return 0 if ratio <= TARGET_TOKEN_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
