"""The data of the results browser's run pages (CONTRACT section 22): the runs list,
one run (with its latest judge bias probe), and two runs compared.

Each function returns a JSON-ready dict that ``app_page.render_app_page`` embeds.
A comparison is ``compare.compare_stored_runs`` itself, as ``ragproof compare`` runs it
(from the stored files a metric at a time, never two whole results frames): the app
shows its paired statistics, never a second implementation of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragproof_core.compare.comparison import (
    MixedJudgesError,
    MixedSettingsError,
    compare_stored_runs,
)
from ragproof_core.compare.trials import FLAKY_SPREAD
from ragproof_core.metrics.custom import stored_registry
from ragproof_core.present import run_filters
from ragproof_core.present.judge_activity import judge_failures_line
from ragproof_core.present.report_queries import TRIAL_CASES, RunFiles, trials_of
from ragproof_core.present.run_list import run_dict
from ragproof_core.present.summary import nothing_scored
from ragproof_core.present.trends import dataset_runs
from ragproof_core.store.run_store import IN_FORCE, RunRecord, RunStore, stored_run_settings


def datasets(records: Sequence[RunRecord]) -> list[str]:
    return sorted({r.dataset for r in records})


# CONTRACT section 31: the results browser's runs page shows this many runs at a time.
RUNS_PAGE = 50


def runs_data(
    records: Sequence[RunRecord], *, offset: int = 0, limit: int | None = None
) -> dict[str, Any]:
    """Finished runs (oldest first) with what tells runs apart, as ``runs --json``: a page
    of ``limit`` runs, ``offset`` runs back from the newest (every run without a limit)."""
    if limit is None:
        return {"runs": [run_dict(r) for r in records], "datasets": datasets(records)}
    total = len(records)
    end = max(total - offset, 0)
    page = records[max(end - limit, 0) : end]
    return {
        "runs": [run_dict(r) for r in page],
        "datasets": datasets(records),
        "paging": {"offset": offset, "limit": limit, "total": total},
    }


# A run's page offers this many of its dataset's newest runs to compare it with.
OTHER_RUNS = 200


def runs_page_data(
    store: RunStore,
    *,
    offset: int = 0,
    limit: int = RUNS_PAGE,
    filters: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``runs_data``'s page read from the catalog as the page needs it: the ``limit`` runs
    ``offset`` back from the newest of those matching ``filters`` (``run_filters``), every
    dataset, every filter's values and the runs that match counted, in one reader of the
    catalog; no other run's record read, so a year of runs costs the page what a few do."""
    chosen = dict(filters or {})
    if not chosen:  # every run: the datasets' counts are the total
        page, counts = store.catalog_page(newest_first=True, limit=limit, offset=offset)
        total = sum(counts.values())
        options = None
    else:
        condition, params, also = run_filters.queries(chosen)
        page, counts, (matching, values) = store.catalog_page_with(
            condition, params=params, newest_first=True, limit=limit, offset=offset, also=also
        )
        total = run_filters.total(matching)
        options = run_filters.options(values)
    return {
        "runs": [run_dict(r) for r in page[::-1]],
        "datasets": sorted(counts),
        "paging": {"offset": offset, "limit": limit, "total": total},
        "filters": chosen,
        "options": options,
    }


def run_page_data(store: RunStore, run_id: str) -> dict[str, Any]:
    """``run_data`` for a run's page: the run as the catalog lists it (else its record file:
    a damaged run) with the datasets, then the ``OTHER_RUNS`` newest of its dataset offered
    to compare with; no other run's record read."""
    listed, counts = store.catalog_page(f"{IN_FORCE} AND run_id = ?", params=[run_id], limit=1)
    record = listed[0] if listed else store.get_run(run_id)
    others = dataset_runs(store, record.dataset, limit=OTHER_RUNS)
    return run_data(store, record, others, sorted(counts))


def run_data(
    store: RunStore,
    record: RunRecord,
    records: Sequence[RunRecord],
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """One run: its record, its metric summaries and the other runs of its dataset (those
    among ``records``, the newest first); the datasets are ``names``, else ``records``'."""
    registry = stored_registry(record.config_json)
    summaries = {s["metric"]: s for s in store.summaries(record.run_id)}
    others = [
        r.run_id for r in reversed(records) if r.dataset == record.dataset and r is not record
    ]
    return {
        # Its judge failures shown beside its status (CONTRACT section 24).
        "run": {**run_dict(record), "judge_failures": judge_failures_line(record)},
        "dataset": record.dataset,
        "datasets": list(names) if names is not None else datasets(records),
        "metrics": [
            {
                "metric": metric,
                "mean": summaries[metric]["mean"],
                "scored": summaries[metric]["scored"],
                "skipped": summaries[metric]["skipped"],
                "errored": summaries[metric]["errored"],
                "judge_errors": summaries[metric]["judge_errors"],
                # Left out of the page's table until asked for (CONTRACT section 25).
                "nothing_scored": nothing_scored(summaries[metric]),
            }
            for metric in registry.order(set(summaries))
        ],
        "others": [o for o in others if o != record.run_id],
        "probes": [probe_row(row) for row in store.probes(record.run_id)],
        "trials": _trials(store, record),
    }


def _trials(store: RunStore, record: RunRecord) -> dict[str, Any] | None:
    """A run with repeats' trials (CONTRACT section 27): the first ``TRIAL_CASES`` cases,
    flaky first, as the report shows them; None without repeats."""
    repeats = int(stored_run_settings(record).get("repeats", 1))
    if repeats == 1:
        return None
    return trials_of(RunFiles(store, record.run_id), TRIAL_CASES, FLAKY_SPREAD).as_json(repeats)


def probe_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row of the run's latest judge bias probe (``ragproof probe``), JSON-ready."""
    keys = ("metric", "perturbation", "cases", "changed", "share", "ci_low", "ci_high")
    return {
        **{key: row[key] for key in keys},
        "judge_model": row["judge_model"],
        "created_at": row["created_at"].isoformat(),
    }


def compare_data(
    store: RunStore, run_a: str, run_b: str, *, allow_mixed: bool = False
) -> dict[str, Any]:
    """B against A as ``ragproof compare A B --json`` computes it, or why it refused."""
    records = [store.get_run(run_a), store.get_run(run_b)]
    data: dict[str, Any] = {
        "a": run_dict(records[0]),
        "b": run_dict(records[1]),
        "allow_mixed_judges": allow_mixed,
        "refused": None,
        "mixed_judges": False,
        "comparison": None,
    }
    try:
        comparison = compare_stored_runs(
            store,
            *records,
            allow_mixed_judges=allow_mixed,
            allow_mixed_settings=allow_mixed,
            registry=stored_registry(*(r.config_json for r in records)),
        )
    except (MixedJudgesError, MixedSettingsError) as exc:
        data["refused"] = str(exc)
        data["mixed_judges"] = True
        return data
    data["comparison"] = comparison.to_dict()
    return data
