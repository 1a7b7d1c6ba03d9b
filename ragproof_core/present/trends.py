"""Per-dataset metric trends over runs, each point with its interval (CONTRACT sections
22, 25): one line per series of runs set up alike (adapter and config digest), named,
over the runs' start times; runs that did not complete are marked, not joined.

A point is one finished run's mean of one metric over its scored cases,
with the normal-approximation 95% interval ``mean ± 1.96 * sd / sqrt(n)``
(sample sd, ddof 1; none below two scored cases). The report's interval is
a bootstrap; over hundreds of runs the normal one costs one aggregate query
instead of a resampling per run and metric, and for scores in [0, 1] the two
agree closely once a run has a few dozen cases. The page says which it shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.config.identity import SHORT_DIGEST
from ragproof_core.metrics.registry import Registry
from ragproof_core.model import Status
from ragproof_core.present.run_files import reader, table_files
from ragproof_core.store.run_store import IN_FORCE, RunRecord, RunStore

Z_95 = 1.96
COMPLETED = "completed"
# Runs one trend page shows: a dataset's newest, older ones a page further (``offset``),
# so a year of runs costs a page no more than a few (CONTRACT section 31).
TREND_RUNS = 200


@dataclass(frozen=True, slots=True)
class MetricMoments:
    """What a point of the trend needs from one run's scores of one metric."""

    run_id: str
    metric: str
    n: int
    mean: float | None
    sd: float | None


def normal_interval(mean: float | None, sd: float | None, n: int) -> tuple[float, float] | None:
    """``mean ± 1.96 sd/sqrt(n)``; None without a mean or below two values."""
    if mean is None or sd is None or n < 2 or math.isnan(sd):
        return None
    half = Z_95 * sd / math.sqrt(n)
    return (mean - half, mean + half)


def run_moments(store: RunStore, run_ids: Sequence[str]) -> list[MetricMoments]:
    """Scored count, mean and sample sd of every metric of each run, in one query."""
    files = table_files(store, run_ids, "case_results")
    if not files:
        return []
    with reader(store) as con:
        rows = con.execute(
            "SELECT run_id, metric, count(value), avg(value), stddev_samp(value) "
            "FROM read_parquet(?, union_by_name = true) "
            "WHERE status = ? AND value IS NOT NULL GROUP BY run_id, metric",
            [files, Status.SCORED.value],
        ).fetchall()
    return [MetricMoments(r, m, int(n), mean, sd) for r, m, n, mean, sd in rows]


@dataclass(frozen=True, slots=True)
class Series:
    """Runs of one dataset set up alike (CONTRACT section 25): one adapter and one
    config digest. Runs stored before the digest existed share a series per adapter."""

    adapter: str
    config_digest: str | None

    @property
    def short_adapter(self) -> str:
        """The adapter's class (``RecordedAdapter``), as a line's label names it."""
        return self.adapter.rsplit(":", 1)[-1].rsplit(".", 1)[-1]


def series_of(record: RunRecord) -> Series:
    return Series(record.adapter, record.config_digest)


def _label(series: Series, runs: Sequence[RunRecord]) -> str:
    """A line's name: the newest name its runs were given, else its adapter, and the
    digest's first characters that tell it from the dataset's other lines."""
    named = [r.name for r in runs if r.name]
    head = named[-1] if named else series.short_adapter
    digest = series.config_digest[:SHORT_DIGEST] if series.config_digest else "no digest"
    return f"{head} · {digest}"


def trend_window(
    records: Sequence[RunRecord], dataset: str, offset: int = 0, limit: int = TREND_RUNS
) -> tuple[list[RunRecord], dict[str, int]]:
    """The dataset's runs one page shows, oldest first: the newest ``limit`` after the
    ``offset`` newest; and where the page stands (``offset``, ``limit``, ``total``)."""
    runs = [r for r in records if r.dataset == dataset]
    end = max(0, len(runs) - offset)
    return runs[max(0, end - limit) : end], {"offset": offset, "limit": limit, "total": len(runs)}


def trend_page(
    store: RunStore, dataset: str, offset: int = 0, limit: int = TREND_RUNS
) -> tuple[list[RunRecord], dict[str, int], dict[str, int]]:
    """``trend_window`` read from the catalog: only the ``limit`` runs of ``dataset`` after
    its ``offset`` newest are decoded; with where the page stands and every dataset's
    runs counted (the page's list), in one reader of the catalog."""
    runs, counts = store.catalog_page(
        f"{IN_FORCE} AND dataset = ?", params=[dataset], limit=limit, offset=offset
    )
    window = {"offset": offset, "limit": limit, "total": counts.get(dataset, 0)}
    return runs[::-1], window, counts


def dataset_runs(store: RunStore, dataset: str, *, limit: int, offset: int = 0) -> list[RunRecord]:
    """The ``limit`` finished runs of ``dataset`` after its ``offset`` newest, oldest first,
    from the catalog: no other run's record decoded."""
    return store.catalog_records(
        f"{IN_FORCE} AND dataset = ?",
        params=[dataset],
        newest_first=True,
        limit=limit,
        offset=offset,
    )[::-1]


def dataset_trends(
    dataset: str,
    records: Sequence[RunRecord],
    moments: Iterable[MetricMoments],
    registry: Registry,
) -> dict[str, Any]:
    """The trend page's data: the dataset's runs oldest first, each in its series (one
    line per adapter and config digest, named), one chart per metric any run scored.
    A run that did not complete is marked ``aborted``: its point is drawn apart, never
    joined to its line (CONTRACT sections 25, 29)."""
    runs = [r for r in records if r.dataset == dataset]
    order = {r.run_id: i for i, r in enumerate(runs)}
    lines: dict[Series, list[RunRecord]] = {}
    for r in runs:
        lines.setdefault(series_of(r), []).append(r)
    index = {key: i for i, key in enumerate(lines)}
    by_metric: dict[str, dict[str, MetricMoments]] = {}
    for m in moments:
        if m.run_id in order:
            by_metric.setdefault(m.metric, {})[m.run_id] = m
    return {
        "dataset": dataset,
        "runs": [
            {
                "run_id": r.run_id,
                "started_at": r.started_at.isoformat(),
                "status": r.status,
                "name": r.name,
                "series": index[series_of(r)],
                "aborted": r.status != COMPLETED,
            }
            for r in runs
        ],
        "series": [
            {
                "adapter": key.adapter,
                "config_digest": key.config_digest,
                "label": _label(key, members),
                "runs": len(members),
            }
            for key, members in lines.items()
        ],
        "interval": "normal approximation, 95%: mean ± 1.96·sd/√n over the run's scored cases"
        "; within [0, 1] for a bounded metric",
        "metrics": [
            {
                "metric": metric,
                "higher_is_better": registry.higher_is_better(metric),
                "bounded": registry.bounded(metric),
                "points": _points(runs, by_metric[metric], registry.bounded(metric)),
            }
            for metric in registry.order(set(by_metric))
        ],
    }


def _points(
    runs: Sequence[RunRecord], moments: Mapping[str, MetricMoments], bounded: bool
) -> list[dict]:
    """A point per run that scored the metric; a bounded metric's interval within [0, 1]
    (CONTRACT section 25), a count's or a latency's as it is."""
    points = []
    for index, record in enumerate(runs):
        m = moments.get(record.run_id)
        if m is None or m.mean is None:
            continue
        ci = normal_interval(m.mean, m.sd, m.n)
        if ci is not None and bounded:
            ci = (max(0.0, ci[0]), min(1.0, ci[1]))
        points.append(
            {
                "run": index,  # the run is ``runs[index]``: its id is not repeated per point
                "mean": m.mean,
                "ci": None if ci is None else list(ci),
                "n": m.n,
            }
        )
    return points
