"""A finished run whose judge scores are known exactly, written straight into a store:
what the labelling, calibration and probe tests label and perturb.

Twenty cases ``q01``..``q20``. answer_relevance is judge-scored on all of them:
``q01``-``q10`` relevant (1), ``q11``-``q16`` partial (0.5), ``q17``-``q20``
irrelevant (0). groundedness is judge-scored on ``q01``-``q08`` with scores
0.75, 0.25, 1, 0, 1, 0.5, 1, 0.25 (bands 1, 0.5, 1, 0, 1, 0.5, 1, 0.5). Each
answer has two chunks, so reversing the context changes what a judge sees.
``abstention`` is a heuristic score (no judge reply): never labelled or probed.
With ``rubric=True`` the run also declares a rubric metric of its own, ``custom.four``
(four bands, none/some/most/all: 0, 1/3, 2/3, 1), judge-scored on ``q01``-``q06``.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from ragproof_core.calibration.probe import FILLER
from ragproof_core.model import Answer, Case, CaseKind, CaseOutput, Chunk, scored
from ragproof_core.store.run_store import RunRecord, RunStore
from tests.support.judge_server import ReceivedRequest, default_content

RELEVANCE = "generation.answer_relevance"
GROUNDEDNESS = "generation.groundedness"
ABSTENTION = "robustness.abstention"
CASE_IDS = [f"q{i:02d}" for i in range(1, 21)]
RELEVANCE_SCORES = {c: 1.0 if i < 10 else 0.5 if i < 16 else 0.0 for i, c in enumerate(CASE_IDS)}
GROUNDEDNESS_SCORES = dict(
    zip(CASE_IDS[:8], [0.75, 0.25, 1.0, 0.0, 1.0, 0.5, 1.0, 0.25], strict=True)
)
VERDICTS = {1.0: "relevant", 0.5: "partial", 0.0: "irrelevant"}
RUBRIC = "custom.four"
RUBRIC_BANDS = ("none", "some", "most", "all")
RUBRIC_TABLE = {
    "name": RUBRIC,
    "higher_is_better": True,
    "rubric": "How much of the question does the answer cover?",
    "bands": list(RUBRIC_BANDS),
    "material": ["question", "answer"],
}
RUBRIC_VERDICTS = dict(
    zip(CASE_IDS[:6], ["all", "most", "some", "none", "all", "most"], strict=True)
)
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def cases() -> list[Case]:
    return [
        Case(c, f"What does item {c} say?", CaseKind.QA, None, f"Item {c} says yes.")
        for c in CASE_IDS
    ]


def outputs() -> list[CaseOutput]:
    return [
        CaseOutput(
            c,
            Answer(
                f"Item {c} says yes.",
                (Chunk(f"{c}-a", f"Item {c} says yes."), Chunk(f"{c}-b", "Unrelated text.")),
                (f"{c}-a",),
            ),
            None,
            None,
            0.1,
        )
        for c in CASE_IDS
    ]


def rubric_results() -> list:
    return [
        scored(c, RUBRIC, RUBRIC_BANDS.index(v) / 3, json.dumps({"verdict": v}))
        for c, v in RUBRIC_VERDICTS.items()
    ]


def results() -> list:
    out = [
        scored(c, RELEVANCE, s, json.dumps({"verdict": VERDICTS[s]}))
        for c, s in RELEVANCE_SCORES.items()
    ]
    for c, s in GROUNDEDNESS_SCORES.items():
        claims = [{"claim": f"claim {i}", "supported": i < s * 4} for i in range(4)]
        out.append(scored(c, GROUNDEDNESS, s, json.dumps({"claims": claims})))
    out += [scored(c, ABSTENTION, 1.0) for c in CASE_IDS[:3]]
    return out


def write_judged_run(
    store: RunStore,
    run_id: str = "judged",
    *,
    judge_model: str = "openai/judge-test",
    prompt_hashes: dict[str, str] | None = None,
    judge_mode: str = "per_metric",
    rubric: bool = False,
    dataset: str = "judged.jsonl",
    started_at: datetime = T0,
    adapter: str = "recorded",
    name: str | None = None,
    tags: dict[str, str] | None = None,
) -> str:
    config: dict = {"run": {"k": 5, "source_match": "chunk"}}
    if rubric:
        config["metrics"] = [RUBRIC_TABLE]
    store.write_manifest(run_id, {"run_id": run_id, "dataset": dataset})
    store.write_dataset(run_id, cases())
    store.write_outputs(run_id, outputs())
    store.write_case_results(run_id, results() + (rubric_results() if rubric else []))
    store.write_summaries(run_id, [])
    store.write_run(
        RunRecord(
            run_id=run_id,
            dataset=dataset,
            adapter=adapter,
            status="completed",
            started_at=started_at,
            finished_at=started_at + timedelta(seconds=5),
            judge_model=judge_model,
            prompt_hashes=prompt_hashes or {},
            config_json=json.dumps(config),
            cost_usd=None,
            cases=len(CASE_IDS),
            case_failures=0,
            judge_requests=28,
            cache_hits=0,
            judge_mode=judge_mode,
            name=name,
            tags=tags or {},
        )
    )
    return run_id


CASE_IN_QUESTION = re.compile(r"item (q\d+) say")


def swayed_judge(request: ReceivedRequest) -> str:
    """The local judge server's replies, swayed as scripted for the probe tests.

    - answer_relevance: "irrelevant" for an answer padded with the probe's filler when
      the case's number is odd, else the default "relevant";
    - groundedness: every claim unsupported when the context comes reversed (its first
      chunk is the case's ``-b`` chunk) and the case's number is even, else the default;
    - anything else: the default reply.
    """
    blocks = request.blocks()
    texts = {b["name"]: b["text"] for b in blocks if "id" not in b}
    found = CASE_IN_QUESTION.search(texts.get("question", ""))
    number = int(found.group(1)[1:]) if found else 0
    if request.prompt == "answer_relevance" and FILLER in texts.get("answer", "") and number % 2:
        return json.dumps({"verdict": "irrelevant"})
    chunks = [b for b in blocks if "id" in b]
    reversed_ = bool(chunks) and chunks[0]["id"].endswith("-b")
    if request.prompt == "groundedness" and reversed_ and number % 2 == 0:
        return json.dumps({"claims": [{"claim": texts["answer"], "supported": False}]})
    return default_content(request)
