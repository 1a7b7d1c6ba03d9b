"""The labelling queue of one run: which judge-scored cases a person labels, in what
order, and where they stopped (CONTRACT section 22).

The interface the labelling pages use::

    queue = LabelQueue.load(store, run_id, metric=None, per_metric=20, seed=0)
    state = queue.state(store, "ann")        # QueueState(next, done, total)
    state.next                               # a LabelItem, or None when all are done
    queue.record(store, case_id, metric, score, "ann")   # stored at once: (its id, label)

The sample is drawn once per (run, metric, size, seed), so every reload,
process or machine sees the same items in the same order; where a
person stopped is read back from the store (``RunStore.labelled``, one
listing), never kept in memory. Several annotators label the same sample,
each at their own pace.

The sample is stratified by the judge's band with proportional allocation
(``stratified_sample``): each band gets its share of the run's judge-scored
cases, up to rounding. Proportional, not equal, shares because the
bias-corrected mean (``ppi.py``) needs its labelled cases to mirror the run:
over-sampling a rare band would over-weight that band's judge error.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ragproof_core.adapters.history import with_stored_histories
from ragproof_core.calibration.agreement import BANDS, band
from ragproof_core.calibration.bands import Band, metric_bands
from ragproof_core.calibration.labels import judge_scores
from ragproof_core.metrics.custom import stored_tables
from ragproof_core.metrics.registry import REGISTRY, metric_order
from ragproof_core.model import Chunk, Message, Status
from ragproof_core.store.labels import LabelError, StoredLabel, new_label
from ragproof_core.store.run_store import RunStore

DEFAULT_PER_METRIC = 20


def allocate(counts: Sequence[int], size: int) -> list[int]:
    """``size`` seats shared among strata of ``counts`` in proportion, by largest
    remainder (ties to the earlier stratum); ``size`` is at most ``sum(counts)``."""
    total = sum(counts)
    if not 0 <= size <= total:
        raise ValueError(f"cannot draw {size} of {total}")
    if total == 0:
        return [0 for _ in counts]
    seats = [size * n // total for n in counts]
    remainders = [size * n % total for n in counts]
    left = size - sum(seats)
    for index in sorted(range(len(counts)), key=lambda i: -remainders[i])[:left]:
        seats[index] += 1
    return seats


def stratified_sample(
    scores: Mapping[str, float], size: int, rng: np.random.Generator
) -> list[str]:
    """Up to ``size`` case ids of ``scores`` (case id -> judge score), stratified by
    band: each band's seats (``allocate``) drawn without replacement from its ids in
    sorted order, then all shuffled so the bands come mixed."""
    strata = {b: sorted(c for c, s in scores.items() if band(s) == b) for b in BANDS}
    seats = allocate([len(strata[b]) for b in BANDS], min(size, len(scores)))
    chosen: list[str] = []
    for b, count in zip(BANDS, seats, strict=True):
        ids = strata[b]
        chosen += [ids[int(i)] for i in rng.choice(len(ids), size=count, replace=False)]
    return [chosen[int(i)] for i in rng.permutation(len(chosen))]


def metric_rng(seed: int, metric: str) -> np.random.Generator:
    """The generator of one metric's sample: seeded by ``seed`` and the metric's name, so
    a metric's sample is the same whichever other metrics are sampled beside it."""
    return np.random.default_rng([seed, zlib.crc32(metric.encode("utf-8"))])


@dataclass(frozen=True, slots=True)
class LabelItem:
    """One case to label for one metric, with what the person sees. ``judge_score``
    and ``judge_raw_json`` are shown only once the person has scored it."""

    run_id: str
    case_id: str
    metric: str
    question: str
    answer: str | None
    context: tuple[Chunk, ...] | None  # what the judge was shown (None: no context)
    judge_score: float
    judge_raw_json: str | None
    bands: tuple[Band, ...]
    # A conversation's later turn: the earlier turns its judge prompts carried.
    history: tuple[Message, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.case_id, self.metric)

    @property
    def judge_band(self) -> float:
        return band(self.judge_score)


@dataclass(frozen=True, slots=True)
class QueueState:
    """Where one annotator stands: the next item (None when done) and the count done."""

    next: LabelItem | None
    done: int
    total: int


@dataclass(frozen=True)
class LabelQueue:
    run_id: str
    items: tuple[LabelItem, ...]
    # Every judge-scored case of the run by metric: any of them may be labelled.
    judged: Mapping[str, Mapping[str, float]]

    @classmethod
    def load(
        cls,
        store: RunStore,
        run_id: str,
        *,
        metric: str | None = None,
        per_metric: int = DEFAULT_PER_METRIC,
        seed: int = 0,
    ) -> LabelQueue:
        """The seeded sample of ``per_metric`` judge-scored cases of each judge metric
        (``metric`` alone when given), metric by metric in report order.

        ``RunNotFound`` for a run that is not finished; ``LabelError`` for a metric
        the judge scored no case of, or a size below 1.
        """
        record = store.get_run(run_id)
        if per_metric < 1:
            raise LabelError(f"sample must be at least 1, got {per_metric}")
        results = store.case_results_frame(run_id)
        judged = judge_scores(results)
        if metric is not None and metric not in judged:
            known = ", ".join(metric_order(set(judged))) or "none"
            raise LabelError(
                f"metric {metric!r}: the judge scored no case of it in run {run_id} "
                f"(judge metrics: {known})"
            )
        # A conversation's own metric has no question, answer and context to show: it is
        # labelled in a file, whose sample lines carry the conversation (labels.py).
        whole = {m for m in judged if (found := REGISTRY.spec(m)) and found.per_conversation}
        if metric in whole:
            raise LabelError(
                f"metric {metric!r} is scored per conversation: label it in the file "
                "`ragproof calibrate --sample N --run RUN_ID --out FILE` writes"
            )
        metrics = [metric] if metric is not None else metric_order(set(judged) - whole)
        picked = [
            (m, c)
            for m in metrics
            for c in stratified_sample(judged[m], per_metric, metric_rng(seed, m))
        ]
        raw = _judge_replies(results, set(picked))
        # A rubric metric of the run's own is labelled on its own bands.
        rubrics = {t.name: t.bands for t in stored_tables(record.config_json) if t.rubric}
        dataset = store.read_dataset(run_id)
        cases = {c.id: c for c in dataset}
        outputs = {o.case_id: o for o in with_stored_histories(dataset, store.read_outputs(run_id))}
        items = []
        for m, case_id in picked:
            output = outputs[case_id]
            items.append(
                LabelItem(
                    run_id,
                    case_id,
                    m,
                    cases[case_id].question,
                    None if output.answer is None else output.answer.text,
                    output.context,
                    judged[m][case_id],
                    raw.get((m, case_id)),
                    metric_bands(m, rubrics.get(m, ())),
                    output.history or (),
                )
            )
        return cls(run_id, tuple(items), judged)

    def item(self, case_id: str, metric: str) -> LabelItem | None:
        return next((i for i in self.items if i.key == (case_id, metric)), None)

    def state(self, store: RunStore, annotator: str) -> QueueState:
        """The first item ``annotator`` has not labelled, and how many they have."""
        done = store.labelled(self.run_id, annotator, (i.key for i in self.items))
        upcoming = next((i for i in self.items if i.key not in done), None)
        return QueueState(upcoming, len(done), len(self.items))

    def record(
        self,
        store: RunStore,
        case_id: str,
        metric: str,
        score: Any,
        annotator: Any,
        *,
        now: datetime | None = None,
    ) -> tuple[str, StoredLabel]:
        """Check and store one label at once: its id and the label. ``LabelError`` names
        what is wrong (a case the judge did not score for that metric, a score outside
        [0, 1], a bad name)."""
        if case_id not in self.judged.get(metric, {}):
            raise LabelError(
                f"case {case_id!r} metric {metric!r}: not a judge-scored case of run {self.run_id}"
            )
        label = new_label(self.run_id, case_id, metric, score, annotator, now=now)
        return store.write_label(label), label


def _judge_replies(results: Any, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    scored = results[results["status"] == Status.SCORED.value]
    return {
        (str(m), str(c)): raw
        for m, c, raw in zip(
            scored["metric"], scored["case_id"], scored["judge_raw_json"], strict=True
        )
        if (str(m), str(c)) in wanted
    }
