"""Human labels for a run's judge scores: reading them, matching them, sampling cases to label.

A labels file is JSON Lines, one ``{"case_id", "metric", "score"}`` per line,
with a human score in [0, 1] (CONTRACT section 12). Lines may carry more keys
(the file ``sample_for_labelling`` writes carries question, answer and the
judge's score, so a person can label in place); a line whose ``score`` is
still null is not labelled yet and is left out. Anything else malformed is
bad input naming the file and line, and nothing is computed or stored.

A metric's judge-scored cases are those it scored from a judge reply
(``judge_raw_json`` set): heuristic scores (refusals without a judge, empty
answers) are not the judge's and are not corrected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragproof_core.adapters.history import after_turn, stored_histories
from ragproof_core.calibration.ppi import PPIEstimate, estimate
from ragproof_core.metrics.registry import ALL_METRIC_NAMES, metric_order
from ragproof_core.model import Case, CaseOutput, Message, Status
from ragproof_core.text_table import text_table

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd


class LabelsError(ValueError):
    """A labels file that cannot be used; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Label:
    case_id: str
    metric: str
    score: float
    line: dict[str, Any]  # the line as given, for ``unmatched``


@dataclass(frozen=True, slots=True)
class LabelAgreement:
    """How well the people agree with each other, and the judge with them, on one
    metric's labelled cases: Krippendorff's alpha (interval) over the banded scores
    (``stored_calibration.py``). None where undefined (fewer than two annotators for
    ``annotator_alpha``; nothing pairable; no variation at all)."""

    annotators: int
    annotator_alpha: float | None
    judge_alpha: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "annotators": self.annotators,
            "annotator_alpha": self.annotator_alpha,
            "judge_alpha": self.judge_alpha,
        }


@dataclass(frozen=True, slots=True)
class MetricCalibration:
    metric: str
    estimate: PPIEstimate
    # Set when the labels came from the store (``ragproof label``), where annotators are known.
    agreement: LabelAgreement | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {} if self.agreement is None else self.agreement.to_dict()
        return {"metric": self.metric, **self.estimate.to_dict(), **extra}


@dataclass(frozen=True, slots=True)
class RunCalibration:
    run_id: str
    metrics: tuple[MetricCalibration, ...]
    unmatched: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "metrics": [m.to_dict() for m in self.metrics],
            "unmatched": list(self.unmatched),
        }

    def render_table(self) -> str:
        def num(x: float | None) -> str:
            return "-" if x is None else f"{x:.4f}"

        def ci(x: tuple[float, float] | None) -> str:
            return "-" if x is None else f"[{x[0]:.4f}, {x[1]:.4f}]"

        def agreement_cells(found: LabelAgreement | None) -> list[str]:
            if found is None:
                return ["0", "-", "-"]
            return [str(found.annotators), num(found.annotator_alpha), num(found.judge_alpha)]

        headers = ["metric", "N", "n", "judge mean", "judge 95% CI", "human mean"]
        headers += ["human 95% CI", "PPI mean", "PPI 95% CI"]
        agreement = any(m.agreement is not None for m in self.metrics)
        if agreement:
            headers += ["annotators", "annotator alpha", "judge alpha"]
        rows = [
            [
                m.metric,
                str(e.n_judged),
                str(e.n_labelled),
                num(e.judge_mean),
                ci(e.judge_ci),
                num(e.human_mean),
                ci(e.human_ci),
                num(e.ppi_mean),
                ci(e.ppi_ci),
            ]
            + (agreement_cells(m.agreement) if agreement else [])
            for m in self.metrics
            for e in (m.estimate,)
        ]
        out = [f"Bias-corrected means for run {self.run_id}", ""]
        out += text_table(headers, rows)
        out.append(
            "Read: N judge-scored cases, n of them labelled by a human. PPI mean = the judge's "
            "mean on the unlabelled cases plus its average error on the labelled ones; its "
            "interval holds whatever the judge's bias. '-' needs n >= 2 and N - n >= 2."
        )
        if agreement:
            out.append(
                "Agreement: Krippendorff's alpha (interval, on the bands 0 / 0.5 / 1) among the "
                "annotators, and with the judge as one more annotator: a judge alpha well below "
                "the annotators' means the judge agrees with people less than they agree with "
                "each other. '-' needs two annotators (annotator alpha) and some variation."
            )
        if self.unmatched:
            out.append(
                f"{len(self.unmatched)} label line(s) name a case the judge did not score in "
                "this run (see --json's unmatched)."
            )
        return "\n".join(out)


# --- reading --------------------------------------------------------------------------------


def _score(value: Any) -> float | None:
    # bool is an int in Python: `true` must not pass for 1.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if 0.0 <= value <= 1.0 else None


def read_labels(path: Path | str, known: Sequence[str] = ALL_METRIC_NAMES) -> list[Label]:
    """The labelled lines of ``path``; ``LabelsError`` for the first bad line. ``known``:
    the metrics a label may name (a run's own metrics of ``[[metric]]`` tables too)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LabelsError(f"{path}: no such labels file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelsError(f"{path}: cannot read labels file: {exc}") from None
    labels: list[Label] = []
    seen: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise LabelsError(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(obj, dict):
            raise LabelsError(
                f'{where}: a label must be an object {{"case_id", "metric", "score"}}'
            )
        for key in ("case_id", "metric", "score"):
            if key not in obj:
                raise LabelsError(f"{where}: missing key {key!r}")
        case_id, metric = obj["case_id"], obj["metric"]
        if not isinstance(case_id, str) or not case_id:
            raise LabelsError(f"{where}: case_id must be a non-empty string")
        # Every declared metric: a conversation's own (conversation.knowledge_retention,
        # labelled under the conversation's id) and the opt-in ones included.
        if metric not in known:
            raise LabelsError(f"{where}: unknown metric {metric!r}; known: {', '.join(known)}")
        if obj["score"] is None:
            continue  # not labelled yet (a sample line left as written)
        score = _score(obj["score"])
        if score is None:
            raise LabelsError(f"{where}: score must be a number in [0, 1], got {obj['score']!r}")
        earlier = seen.setdefault((case_id, metric), number)
        if earlier != number:
            raise LabelsError(
                f"{where}: case {case_id!r} metric {metric!r} is labelled twice "
                f"(first at line {earlier})"
            )
        labels.append(Label(case_id, metric, score, obj))
    return labels


# --- matching -------------------------------------------------------------------------------


def judge_scores(results: pd.DataFrame) -> dict[str, dict[str, float]]:
    """{metric: {case_id: judge score}} over the cases each metric scored from a judge reply."""
    scored = results[
        (results["status"] == Status.SCORED.value)
        & results["value"].notna()
        & results["judge_raw_json"].notna()
    ]
    out: dict[str, dict[str, float]] = {}
    for metric, case_id, value in zip(
        scored["metric"], scored["case_id"], scored["value"], strict=True
    ):
        out.setdefault(str(metric), {})[str(case_id)] = float(value)
    return out


def calibrate_run(run_id: str, results: pd.DataFrame, labels: Sequence[Label]) -> RunCalibration:
    """Judge-only, human-only and PPI means per judge metric of one run."""
    scores = judge_scores(results)
    human: dict[str, dict[str, float]] = {}
    unmatched: list[dict[str, Any]] = []
    for label in labels:
        if label.case_id in scores.get(label.metric, {}):
            human.setdefault(label.metric, {})[label.case_id] = label.score
        else:
            unmatched.append(label.line)
    metrics = []
    for metric in metric_order(set(scores)):
        judged = scores[metric]
        labelled = human.get(metric, {})
        # Sorted ids: the same labels always give bit-identical figures.
        ids_l = sorted(labelled)
        ids_u = sorted(set(judged) - set(labelled))
        metrics.append(
            MetricCalibration(
                metric,
                estimate(
                    [judged[c] for c in ids_l],
                    [labelled[c] for c in ids_l],
                    [judged[c] for c in ids_u],
                ),
            )
        )
    return RunCalibration(run_id, tuple(metrics), tuple(unmatched))


# --- sampling -------------------------------------------------------------------------------


def sample_for_labelling(
    results: pd.DataFrame,
    cases: Sequence[Case],
    outputs: Sequence[CaseOutput],
    per_metric: int,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Up to ``per_metric`` judge-scored cases of each judge metric, drawn without replacement.

    Seeded (numpy ``default_rng(seed)``) over case ids in sorted order, so the
    same run, N and seed always give the same lines. Lines come metric by
    metric, in the order drawn.
    """
    if per_metric < 1:
        raise ValueError(f"--sample must be at least 1, got {per_metric}")
    rng = np.random.default_rng(seed)
    questions = {c.id: c.question for c in cases}
    answers: Mapping[str, str | None] = {
        o.case_id: None if o.answer is None else o.answer.text for o in outputs
    }
    shown = _conversation_material(cases, outputs)
    scores = judge_scores(results)
    lines: list[dict[str, Any]] = []
    for metric in metric_order(set(scores)):
        ids = sorted(scores[metric])
        chosen = rng.choice(len(ids), size=min(per_metric, len(ids)), replace=False)
        for index in chosen:
            case_id = ids[int(index)]
            lines.append(
                {
                    "case_id": case_id,
                    "metric": metric,
                    "question": questions.get(case_id),
                    "answer": answers.get(case_id),
                    **shown.get(case_id, {}),
                    "judge_score": scores[metric][case_id],
                    "score": None,
                }
            )
    return lines


def _conversation_material(
    cases: Sequence[Case], outputs: Sequence[CaseOutput]
) -> dict[str, dict[str, list[dict[str, str]]]]:
    """What a person labelling a conversation's part needs beside question and answer, as
    the judge saw it: a later turn's ``history`` (the earlier turns), and a conversation's
    own metric's ``conversation`` (every turn), each a list of ``{"role", "content"}``."""
    by_id = {o.case_id: o for o in outputs}
    histories = stored_histories(cases, by_id)
    shown: dict[str, dict[str, list[dict[str, str]]]] = {}
    for case in cases:
        turn, history = case.turn, histories.get(case.id)
        if turn is None or history is None:
            continue
        if history:
            shown[case.id] = {"history": _messages(history)}
        output = by_id.get(case.id)
        if turn.last and output is not None and not output.failed:
            whole = after_turn(history, case.question, output.answer)
            shown[turn.conversation_id] = {"conversation": _messages(whole)}
    return shown


def _messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [m.to_dict() for m in messages]
