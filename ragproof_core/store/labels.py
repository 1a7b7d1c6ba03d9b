"""Human labels kept in the store (CONTRACT section 22): one small Parquet file per label.

``RunStore.write_label`` writes each label the moment a person gives it, as
its own object under ``runs/<run_id>/labels/<label_id>.parquet``. Files are
never rewritten, so any number of annotators, in any number of processes or
machines sharing a bucket, never lose a write: there is nothing to lock and
nothing to read-modify-write. A person who changes their mind writes a newer
label; readers (``current_labels``, the ``labels`` view) take the latest per
run, case, metric and annotator.

A label's file name (``label_id``) starts with its time, so names sort
oldest first, and carries digests of its annotator and of its case and
metric, so "which of these has this person labelled?" (resuming a session)
is answered from one listing of the folder, without reading a file.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from ragproof_core.store import tables

LABELS_FOLDER = "labels"
LABELS_SCHEMA = tables.LABELS.schema
MAX_ANNOTATOR_CHARS = 64


class LabelError(ValueError):
    """A label that cannot be stored; the message names the field at fault."""


@dataclass(frozen=True, slots=True)
class StoredLabel:
    """One person's score of one judge-scored case of a run, for one metric."""

    run_id: str
    case_id: str
    metric: str
    score: float
    annotator: str
    labelled_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "case_id": self.case_id,
            "metric": self.metric,
            "score": self.score,
            "annotator": self.annotator,
            "labelled_at": self.labelled_at.isoformat(),
        }

    @property
    def key(self) -> tuple[str, str, str]:
        """(case_id, metric, annotator): a newer label with the same key replaces this one."""
        return (self.case_id, self.metric, self.annotator)


def check_annotator(name: Any) -> str:
    """``name`` if it can name an annotator: 1-64 printable characters, not blank."""
    if not isinstance(name, str) or not name.strip():
        raise LabelError("annotator must be a non-empty name")
    if len(name) > MAX_ANNOTATOR_CHARS:
        raise LabelError(f"annotator must be at most {MAX_ANNOTATOR_CHARS} characters")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise LabelError("annotator must not hold control characters")
    return name


def check_score(score: Any) -> float:
    """``score`` as a float if it is a number in [0, 1] (``True`` is not 1)."""
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise LabelError(f"score must be a number in [0, 1], got {score!r}")
    value = float(score)
    if not 0.0 <= value <= 1.0:  # NaN fails both comparisons
        raise LabelError(f"score must be a number in [0, 1], got {score!r}")
    return value


def new_label(
    run_id: str,
    case_id: str,
    metric: str,
    score: Any,
    annotator: Any,
    *,
    now: datetime | None = None,
) -> StoredLabel:
    """A checked label stamped ``now`` (UTC); ``LabelError`` names the bad field."""
    if not isinstance(case_id, str) or not case_id:
        raise LabelError("case_id must be a non-empty string")
    if not isinstance(metric, str) or not metric:
        raise LabelError("metric must be a non-empty string")
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return StoredLabel(
        run_id, case_id, metric, check_score(score), check_annotator(annotator), moment
    )


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def annotator_digest(annotator: str) -> str:
    return _digest("annotator", annotator)


def item_digest(case_id: str, metric: str) -> str:
    return _digest("item", case_id, metric)


def label_id(label: StoredLabel) -> str:
    """``<UTC time>-<annotator digest>-<case and metric digest>-<random>``."""
    return (
        f"{label.labelled_at:%Y%m%dT%H%M%S%fZ}-{annotator_digest(label.annotator)}-"
        f"{item_digest(label.case_id, label.metric)}-{secrets.token_hex(4)}"
    )


def id_digests(name: str) -> tuple[str, str] | None:
    """(annotator digest, item digest) of a label file name (``label_id`` + ``.parquet``)."""
    parts = name.removesuffix(".parquet").split("-")
    return (parts[1], parts[2]) if len(parts) == 4 else None


def encode_label(label: StoredLabel) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "run_id": label.run_id,
                "case_id": label.case_id,
                "metric": label.metric,
                "score": label.score,
                "annotator": label.annotator,
                "labelled_at": label.labelled_at,
            }
        ],
        schema=LABELS_SCHEMA,
    )


def decode_labels(table: pa.Table) -> list[StoredLabel]:
    return [
        StoredLabel(
            row["run_id"],
            row["case_id"],
            row["metric"],
            float(row["score"]),
            row["annotator"],
            row["labelled_at"].astimezone(UTC),
        )
        for row in table.to_pylist()
    ]


def current_labels(labels: Iterable[tuple[str, StoredLabel]]) -> list[StoredLabel]:
    """The labels in force from ``(label_id, label)`` pairs: the latest per
    ``StoredLabel.key`` (by ``labelled_at``, then id), oldest first."""
    latest: dict[tuple[str, str, str], tuple[datetime, str, StoredLabel]] = {}
    for label_id, label in labels:
        seen = latest.get(label.key)
        if seen is None or (label.labelled_at, label_id) > seen[:2]:
            latest[label.key] = (label.labelled_at, label_id, label)
    return [label for _, _, label in sorted(latest.values(), key=lambda item: item[:2])]
