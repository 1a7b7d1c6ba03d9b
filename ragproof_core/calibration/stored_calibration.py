"""Bias-corrected means from the labels people stored with ``ragproof label``
(``ragproof calibrate --run RUN_ID`` without ``--labels``; CONTRACT sections 12 and 22).

The labels in force (the latest per case, metric and annotator) are grouped by
case and metric. A case labelled by several people counts once, with the mean
of their scores as its human score y: PPI (``ppi.py``) needs one y per case,
and the mean is the least noisy one the people give. Then everything is as
with a labels file: judge-only, human-only and PPI means per judge metric.

Beside them, per metric, how far to trust the labels themselves
(``LabelAgreement``): Krippendorff's alpha (``krippendorff.py``, interval
level) among the annotators over the cases two or more of them labelled, and
with the judge added as one more annotator. Scores are put on the bands 0, 0.5
and 1 first, as the jury's agreement is, so a judge's 2/3 and a person's 0.5
count as the same verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from statistics import fmean
from typing import TYPE_CHECKING, Any

from ragproof_core.calibration.agreement import band
from ragproof_core.calibration.krippendorff import krippendorff_alpha
from ragproof_core.calibration.labels import (
    Label,
    LabelAgreement,
    RunCalibration,
    calibrate_run,
    judge_scores,
)
from ragproof_core.store.labels import StoredLabel

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd

LEVEL = "interval"


def label_agreement(
    by_annotator: Mapping[str, Mapping[str, float]], judged: Mapping[str, float]
) -> LabelAgreement:
    """Alpha among ``by_annotator`` ({case_id: {annotator: score}}) over one metric's
    judge-scored cases, and with the judge's scores (``judged``) as one more annotator."""
    annotators = sorted({a for scores in by_annotator.values() for a in scores})
    units = [
        [None if a not in scores else band(scores[a]) for a in annotators]
        for case_id, scores in sorted(by_annotator.items())
    ]
    with_judge = [
        [*unit, band(judged[case_id])]
        for unit, case_id in zip(units, sorted(by_annotator), strict=True)
    ]
    return LabelAgreement(
        annotators=len(annotators),
        annotator_alpha=krippendorff_alpha(units, LEVEL) if len(annotators) >= 2 else None,
        judge_alpha=krippendorff_alpha(with_judge, LEVEL),
    )


def calibrate_stored(
    run_id: str, results: pd.DataFrame, stored: Sequence[StoredLabel]
) -> RunCalibration:
    """Judge-only, human-only and PPI means per judge metric from the run's stored labels
    (``RunStore.labels``), with each metric's ``LabelAgreement``. ``unmatched`` holds
    the stored labels (as dicts) of cases the judge did not score for their metric."""
    scores = judge_scores(results)
    by_item: dict[tuple[str, str], dict[str, float]] = {}
    unmatched: list[dict[str, Any]] = []
    for label in stored:
        if label.case_id in scores.get(label.metric, {}):
            by_item.setdefault((label.metric, label.case_id), {})[label.annotator] = label.score
        else:
            unmatched.append(label.to_dict())
    means = [
        Label(case_id, metric, fmean(people.values()), {"case_id": case_id, "metric": metric})
        for (metric, case_id), people in sorted(by_item.items())
    ]
    calibration = calibrate_run(run_id, results, means)
    metrics = []
    for item in calibration.metrics:
        labelled = {c: people for (m, c), people in by_item.items() if m == item.metric}
        agreement = label_agreement(labelled, scores[item.metric]) if labelled else None
        metrics.append(replace(item, agreement=agreement))
    return RunCalibration(run_id, tuple(metrics), tuple(unmatched))
