"""The labelling page's data (``ragproof label``, CONTRACT section 22).

The queue (``calibration.label_queue``) says which case comes next for an
annotator and stores each label; this module turns that into what the page
shows. The judge's verdict is not in the page's data: it travels only in
the reply to the person's own score (``verdict``), so nothing on the page can
anchor the person before they have scored.

The tally beside the case is the calibration the labels give so far, per
metric: how many labels, by how many people, and the judge's raw mean beside
the bias-corrected (PPI) mean of section 12. A case labelled by several
people counts once, with the mean of their scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ragproof_core.calibration.agreement import band
from ragproof_core.calibration.label_queue import LabelItem, LabelQueue, QueueState
from ragproof_core.calibration.ppi import estimate
from ragproof_core.metrics.context_relevance import CONTEXT_RELEVANCE
from ragproof_core.metrics.generation import (
    ANSWER_RELEVANCE,
    CITATION_SUPPORT,
    COMPLETENESS,
    GROUNDEDNESS,
)
from ragproof_core.metrics.registry import metric_order
from ragproof_core.store.labels import StoredLabel

JUDGE_REPLY_CHARS = 4_000

# What the person is asked, in the judge prompt's own terms.
INSTRUCTIONS: dict[str, str] = {
    GROUNDEDNESS: "Is every claim of the answer supported by the context?",
    CITATION_SUPPORT: "Do the passages the answer cites support what it says?",
    ANSWER_RELEVANCE: "Does the answer address the question?",
    COMPLETENESS: "Does the answer cover the expected answer?",
    CONTEXT_RELEVANCE: "Is the retrieved context relevant to the question?",
}


@dataclass(frozen=True, slots=True)
class LabelSession:
    """What the labelling page was opened with: the sample and who is labelling."""

    run_id: str
    metric: str | None
    per_metric: int
    seed: int
    annotator: str


def item_view(item: LabelItem) -> dict[str, Any]:
    """The case as the person sees it before scoring: no judge score, no judge reply."""
    return {
        "case_id": item.case_id,
        "metric": item.metric,
        "instruction": INSTRUCTIONS.get(item.metric, f"Score the answer for {item.metric}."),
        "history": [m.to_dict() for m in item.history],
        "question": item.question,
        "answer": item.answer,
        "context": [{"id": c.id, "text": c.text} for c in item.context or ()],
    }


def verdict(item: LabelItem, score: float) -> dict[str, Any]:
    """The judge's verdict, shown once the person has scored ``item`` with ``score``."""
    raw = item.judge_raw_json
    return {
        "judge_score": item.judge_score,
        "judge_band": item.judge_band,
        "agree": band(score) == item.judge_band,
        "judge_reason": None if raw is None else raw[:JUDGE_REPLY_CHARS],
    }


def label_tally(
    judged: Mapping[str, Mapping[str, float]], labels: Iterable[StoredLabel]
) -> list[dict[str, Any]]:
    """Per labelled metric: label and annotator counts, judge mean and PPI mean with interval."""
    human: dict[str, dict[str, list[float]]] = {}
    people: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for label in labels:
        if label.case_id not in judged.get(label.metric, {}):
            continue
        human.setdefault(label.metric, {}).setdefault(label.case_id, []).append(label.score)
        people.setdefault(label.metric, set()).add(label.annotator)
        counts[label.metric] = counts.get(label.metric, 0) + 1
    rows = []
    for metric in metric_order(set(human)):
        scores = judged[metric]
        per_case = {c: sum(v) / len(v) for c, v in human[metric].items()}
        labelled = sorted(per_case)
        unlabelled = sorted(set(scores) - set(per_case))
        e = estimate(
            [scores[c] for c in labelled],
            [per_case[c] for c in labelled],
            [scores[c] for c in unlabelled],
        )
        rows.append(
            {
                "metric": metric,
                "labels": counts[metric],
                "annotators": len(people[metric]),
                "cases": len(labelled),
                "judge_mean": e.judge_mean,
                "human_mean": e.human_mean,
                "ppi_mean": e.ppi_mean,
                "ppi_ci": None if e.ppi_ci is None else list(e.ppi_ci),
            }
        )
    return rows


def label_page_data(
    session: LabelSession,
    queue: LabelQueue,
    state: QueueState,
    labels: Iterable[StoredLabel],
) -> dict[str, Any]:
    """The page: the next case of the annotator's queue (or none left) and the tally."""
    upcoming = state.next
    bands = upcoming.bands if upcoming is not None else ()
    return {
        "run_id": session.run_id,
        "metric": session.metric or "",
        "sample": session.per_metric,
        "seed": session.seed,
        "annotator": session.annotator,
        "done": state.done,
        "total": state.total,
        "case": None if upcoming is None else item_view(upcoming),
        "bands": [{"score": b.score, "label": b.name, "key": b.key} for b in bands],
        "tally": label_tally(queue.judged, labels),
    }
