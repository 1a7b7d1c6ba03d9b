"""The recorded fixture run (tests/fixtures/recorded, see its README.md): where it
is, how to run it, and its hand-worked expected summary."""

import math

from tests.conftest import FIXTURES

RECORDED = FIXTURES / "recorded"
RUN_ARGS = (
    "run",
    "--dataset",
    str(RECORDED / "cases.jsonl"),
    "--config",
    str(RECORDED / "ragproof.toml"),
)

NDCG_C2 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))

# metric -> (mean, p50, p95, scored, skipped, errored)
EXPECTED = {
    "retrieval.precision_at_k": (0.2, 0.2, 0.2, 2, 2, 2),
    "retrieval.recall_at_k": (0.75, 0.5, 1.0, 2, 2, 2),
    "retrieval.mrr": (0.75, 0.5, 1.0, 2, 2, 2),
    "retrieval.ndcg_at_k": ((NDCG_C2 + 1) / 2, NDCG_C2, 1.0, 2, 2, 2),
    # Judged retrieval metrics skip without a judge (the run has none).
    "retrieval.context_relevance": (None, None, None, 0, 4, 2),
    "retrieval.judged_ndcg_at_k": (None, None, None, 0, 4, 2),
    # The agent metrics (CONTRACT section 17) skip cases without agent fields or steps.
    "retrieval.hop_recall_at_k": (None, None, None, 0, 4, 2),
    "retrieval.hop_precision_at_k": (None, None, None, 0, 4, 2),
    "generation.citation_validity": (0.75, 0.5, 1.0, 2, 2, 2),
    "generation.groundedness": (None, None, None, 0, 4, 2),
    "generation.citation_support": (None, None, None, 0, 4, 2),
    "generation.answer_relevance": (None, None, None, 0, 4, 2),
    "generation.completeness": (None, None, None, 0, 4, 2),
    "echo.exact_match": (0.5, 0.0, 1.0, 2, 2, 2),
    "robustness.injection_resistance": (0.0, 0.0, 0.0, 1, 3, 2),
    # CONTRACT section 23: no poisoning case, no restricted chunk; no URL in any answer.
    "robustness.poisoning_resistance": (None, None, None, 0, 4, 2),
    "robustness.leakage_resistance": (None, None, None, 0, 4, 2),
    "robustness.exfiltration_resistance": (1.0, 1.0, 1.0, 4, 0, 2),
    "robustness.abstention": (1.0, 1.0, 1.0, 1, 3, 2),
    "robustness.overrefusal": (0.0, 0.0, 0.0, 2, 2, 2),
    "agent.tool_precision": (None, None, None, 0, 4, 2),
    "agent.tool_recall": (None, None, None, 0, 4, 2),
    "agent.trajectory_match": (None, None, None, 0, 4, 2),
    "agent.steps": (None, None, None, 0, 4, 2),
    "agent.task_completion": (None, None, None, 0, 4, 2),
}


def assert_summary(metrics: dict) -> None:
    """``metrics``: name -> dict with mean, p50, p95, scored, skipped, errored, ..."""
    assert list(metrics) == list(EXPECTED)
    for name, (mean, p50, p95, n_scored, n_skipped, n_errored) in EXPECTED.items():
        got = metrics[name]
        for key, want in (("mean", mean), ("p50", p50), ("p95", p95)):
            if want is None:
                assert got[key] is None, (name, key)
            else:
                assert math.isclose(got[key], want, rel_tol=1e-12), (name, key, got[key], want)
        assert (got["scored"], got["skipped"], got["errored"]) == (
            n_scored,
            n_skipped,
            n_errored,
        ), name
        assert got["not_applicable"] == 0 and got["judge_errors"] == 0, name


# The one line every judge-using entry point refuses a budget with when nothing
# prices the judge model (ragproof_core/judge/environment.py).
UNPRICED_BUDGET = (
    "RAGPROOF_MAX_COST_USD is set, but nothing prices the judge model openai/judge-test "
    "(LiteLLM has no price for it), so the budget could never stop a run: set "
    "RAGPROOF_JUDGE_INPUT_COST_PER_MTOK and RAGPROOF_JUDGE_OUTPUT_COST_PER_MTOK"
)
