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

from benchmarks._common import RAGPROOF, REPO, WORK, clean_env
from tests.support.judge_server import JudgeServer

JURY = "openai/judge-test,openai/judge-strict"
DATASET = REPO / "data" / "demo" / "cases.jsonl"


def main() -> None:
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
    print(f"jury {judge['model']}: {requests} requests, {judge['judge_errors']} judge errors\n")
    print("| metric | mean | scored | alpha (interval, bands) | cases paired |")
    print("|---|---|---|---|---|")
    for metric, item in judge["agreement"].items():
        alpha = "undefined (no variation)" if item["alpha"] is None else f"{item['alpha']:.3f}"
        mean = out["metrics"][metric]["mean"]
        shown = "-" if mean is None else f"{mean:.4f}"
        scored = out["metrics"][metric]["scored"]
        print(f"| {metric} | {shown} | {scored} | {alpha} | {item['cases']} |")
    scored_cases = out["metrics"]["retrieval.context_relevance"]["scored"]
    print("\ncontext relevance, per scored case (both models together, then per model):\n")
    print("| model | requests/case | input tokens/case | output tokens/case |")
    print("|---|---|---|---|")
    rows = [r for r in judge["usage"] if r["metric"] == "retrieval.context_relevance"]
    for label, chosen in [("jury", rows), *((r["model"], [r]) for r in rows)]:
        req = sum(r["requests"] for r in chosen) / scored_cases
        tin = sum(r["input_tokens"] for r in chosen) / scored_cases
        tout = sum(r["output_tokens"] for r in chosen) / scored_cases
        print(f"| {label} | {req:.2f} | {tin:.0f} | {tout:.0f} |")


if __name__ == "__main__":
    main()
