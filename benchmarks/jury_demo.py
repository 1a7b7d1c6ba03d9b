"""A two-model jury on the demo dataset against the local judge server: the jury's
agreement per metric and what context relevance costs per case.

The server (tests/support/judge_server.py) scripts two "models" with
deterministic, different verdicts: ``judge-test`` grades a retrieved chunk
relevant when it shares 2 or more words of 4+ letters with the question and
partial at 1; ``judge-strict`` needs 3 and 2. Every other prompt gets the same
default reply from both. The server reports no token usage, so token counts are
the client's 4-characters-per-token estimate of the real prompts and replies.

``python -m benchmarks.jury_demo`` (about half a minute; prints Markdown).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchmarks._common import (
    RAGPROOF,
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    parse_args,
    publish,
)
from tests.support.judge_server import JudgeServer

BENCHMARK = Benchmark(
    title="A two-model jury on the demo dataset",
    measures=(
        "`ragproof run` on the demo dataset with a jury of two scripted models of the "
        "local judge server (`judge-test` and the stricter `judge-strict`): the jury's "
        "agreement (Krippendorff's alpha) per metric, and what context relevance costs "
        "per scored case."
    ),
    target="-",
    order=76,
    in_run_all=False,
)

JURY = "openai/judge-test,openai/judge-strict"
DATASET = REPO / "data" / "demo" / "cases.jsonl"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    WORK.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="jury-", dir=WORK))
    try:
        with JudgeServer(usage=None) as server:
            env = clean_env(
                RAGPROOF_STORE=str(home / "store"),
                DAGSTER_HOME=str(home / "dagster"),
                RAGPROOF_JUDGE_MODEL=JURY,
                RAGPROOF_JUDGE_API_BASE=server.url,
                OPENAI_API_KEY="sk-local-jury-demo",
            )
            done = subprocess.run(
                [RAGPROOF, "run", "--dataset", str(DATASET), "--json"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            requests = server.request_count
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"ragproof run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    judge = out["judge"]
    agreement = []
    for metric, item in judge["agreement"].items():
        alpha = "undefined (no variation)" if item["alpha"] is None else f"{item['alpha']:.3f}"
        mean = out["metrics"][metric]["mean"]
        shown = "-" if mean is None else f"{mean:.4f}"
        scored = out["metrics"][metric]["scored"]
        agreement.append([metric, shown, str(scored), alpha, str(item["cases"])])
    scored_cases = out["metrics"]["retrieval.context_relevance"]["scored"]
    rows = [r for r in judge["usage"] if r["metric"] == "retrieval.context_relevance"]
    costs = []
    for label, chosen in [("jury", rows), *((r["model"], [r]) for r in rows)]:
        req = sum(r["requests"] for r in chosen) / scored_cases
        tin = sum(r["input_tokens"] for r in chosen) / scored_cases
        tout = sum(r["output_tokens"] for r in chosen) / scored_cases
        costs.append([label, f"{req:.2f}", f"{tin:.0f}", f"{tout:.0f}"])
    tables = [
        Table(
            f"Jury {judge['model']} on the demo dataset: agreement per metric",
            ["metric", "mean", "scored", "alpha (interval, bands)", "cases paired"],
            agreement,
            [f"{requests} requests, {judge['judge_errors']} judge errors."],
        ),
        Table(
            "Context relevance, per scored case (both models together, then per model)",
            ["model", "requests/case", "input tokens/case", "output tokens/case"],
            costs,
        ),
    ]
    publish(tables, args.emit)


if __name__ == "__main__":
    main()
