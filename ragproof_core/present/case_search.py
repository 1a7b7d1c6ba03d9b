"""A run's cases as the results browser's table shows them (CONTRACT sections 22, 25):
found by text and by a metric's status, sorted by any column, filtered to the failing
ones.

The text matches, case-insensitively and as a substring, the case id, the
question or the answer. The status filter keeps the cases where a metric
(or, with none named, any metric) has that status. A case is failing when any of
its results is an error (a case failure or a judge error) or a scored value breaks
one of the run's floors (its ``[gate]`` table: the value outside the floor's bound,
whether the floor bounds the mean or every case). The rows are in dataset order, or
sorted by the case id, the kind or a metric's value (cases that metric did not
score last, in dataset order). One SQL statement over the run's own Parquet files
finds the page of matches and their total, so a 100,000-case run costs one scan,
not 100,000 decoded cases.

Each metric comes with what the table needs to colour and place it (direction,
bounds, the run's counts, its floor); those with nothing scored are ``unscored``:
the page leaves their columns out until asked (CONTRACT section 25).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragproof_core.compare.floors import SLACK
from ragproof_core.config.gate import Floor
from ragproof_core.metrics.registry import Registry
from ragproof_core.model import Status
from ragproof_core.present.run_files import reader, table_files
from ragproof_core.store.run_store import RunStore

STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
FAILED_STATUSES: tuple[str, ...] = (Status.ERROR.value, Status.JUDGE_ERROR.value)
PAGE_SIZE = 50
TEXT_CHARS = 300  # question and answer, as shown in a result row
# Columns the rows can be sorted by besides a metric ("" = dataset order).
SORT_COLUMNS: tuple[str, ...] = ("", "case", "kind")
ORDERS: tuple[str, ...] = ("asc", "desc")


@dataclass(frozen=True, slots=True)
class CaseQuery:
    text: str = ""
    metric: str = ""  # "" = any metric
    status: str = ""  # "" = any status
    offset: int = 0
    limit: int = PAGE_SIZE
    sort: str = ""  # "" (dataset order), "case", "kind" or a metric's name
    order: str = "asc"  # "asc" | "desc"
    failing: bool = False  # only the cases with an error or a value past a floor


def _clip(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    return {"t": text[:TEXT_CHARS], "cut": max(0, len(text) - TEXT_CHARS)}


def _outside(floors: Sequence[Floor]) -> tuple[str, list[Any]]:
    """SQL (and its parameters) true for a result row that is a failure: an error, or a
    scored value outside a floor's bound."""
    tests = [f"status IN ({', '.join('?' * len(FAILED_STATUSES))})"]
    params: list[Any] = list(FAILED_STATUSES)
    for floor in floors:
        bounds, bound_params = [], []
        if floor.min is not None:
            bounds.append("value < ?")
            bound_params.append(floor.min - SLACK)
        if floor.max is not None:
            bounds.append("value > ?")
            bound_params.append(floor.max + SLACK)
        tests.append(f"(metric = ? AND status = ? AND ({' OR '.join(bounds)}))")
        params += [floor.metric, Status.SCORED.value, *bound_params]
    return " OR ".join(tests), params


def _order(query: CaseQuery, params: list[Any], results: list[str]) -> tuple[str, str]:
    """The join a metric's sort needs (empty otherwise) and the ``ORDER BY`` clause."""
    direction = "DESC" if query.order == "desc" else "ASC"
    if query.sort == "case":
        return "", f"ORDER BY d.id {direction}"
    if query.sort == "kind":
        return "", f"ORDER BY d.kind {direction}, d.file_row_number"
    if not query.sort:
        return "", "ORDER BY d.file_row_number"
    params += [results, query.sort, Status.SCORED.value]
    join = (
        "LEFT JOIN (SELECT case_id, value AS sort_value FROM read_parquet(?, union_by_name = "
        "true) WHERE metric = ? AND status = ?) AS s ON s.case_id = d.id "
    )
    return join, f"ORDER BY s.sort_value {direction} NULLS LAST, d.file_row_number"


def search_cases(
    store: RunStore,
    run_id: str,
    query: CaseQuery,
    floors: Sequence[Floor] = (),
    registry: Registry | None = None,
) -> dict[str, Any]:
    """The matching page of cases with their per-metric results, the total, and the
    run's metrics (``registry`` says their direction and bounds, when given).
    ``floors``: the run's floors, which the failing filter and the page read."""
    dataset = table_files(store, [run_id], "dataset")
    outputs = table_files(store, [run_id], "outputs")
    results = table_files(store, [run_id], "case_results")
    if not (dataset and outputs and results):
        store.get_run(run_id)  # RunNotFound for an unknown or unfinished run
        raise FileNotFoundError(f"run {run_id!r} has no stored cases")
    needle = query.text.strip().lower()
    # Only the filters asked for are in the statement: no scan of the results for a
    # text search alone, no text scan for a status filter alone.
    where: list[str] = []
    filter_params: list[Any] = []
    if needle:
        where.append(
            "(contains(lower(d.id), ?) OR contains(lower(d.question), ?) "
            "OR contains(lower(coalesce(o.answer_text, '')), ?))"
        )
        filter_params += [needle, needle, needle]
    if query.status or query.metric:
        tests = [t for t, v in (("metric = ?", query.metric), ("status = ?", query.status)) if v]
        where.append(
            "d.id IN (SELECT case_id FROM read_parquet(?, union_by_name = true) "
            f"WHERE {' AND '.join(tests)})"
        )
        filter_params += [results, *(v for v in (query.metric, query.status) if v)]
    if query.failing:
        failed, failed_params = _outside(floors)
        where.append(
            f"d.id IN (SELECT case_id FROM read_parquet(?, union_by_name = true) WHERE {failed})"
        )
        filter_params += [results, *failed_params]
    params: list[Any] = [dataset, outputs]
    join, order = _order(query, params, results)
    sql = (
        "SELECT d.id, d.kind, d.question, o.answer_text, count(*) OVER () AS total "
        "FROM read_parquet(?, file_row_number = true) AS d "
        "LEFT JOIN read_parquet(?, union_by_name = true) AS o ON o.case_id = d.id "
        + join
        + (f"WHERE {' AND '.join(where)} " if where else "")
        + f"{order} LIMIT ? OFFSET ?"
    )
    with reader(store) as con:
        rows = con.execute(sql, [*params, *filter_params, query.limit, query.offset]).fetchall()
        ids = [row[0] for row in rows]
        scores = con.execute(
            "SELECT case_id, metric, status, value FROM read_parquet(?, union_by_name = true) "
            "WHERE list_contains(?, case_id)",
            [results, ids],
        ).fetchall()
        counts = con.execute(
            "SELECT metric, count(*) FILTER (WHERE status = ?), count(*) FILTER (WHERE status = ?) "
            "FROM read_parquet(?, union_by_name = true) GROUP BY metric",
            [Status.SCORED.value, Status.JUDGE_ERROR.value, results],
        ).fetchall()
    per_case: dict[str, dict[str, list[Any]]] = {}
    for case_id, metric, status, value in scores:
        per_case.setdefault(case_id, {})[metric] = [status, value]
    total = rows[0][4] if rows else _total(store, run_id, query, floors) if query.offset else 0
    names = [m for m, _, _ in counts]
    if registry is not None:
        names = registry.order(names)
    counted = {m: (int(s), int(j)) for m, s, j in counts}
    floor_of = {f.metric: f for f in floors}
    return {
        "query": {
            "text": query.text,
            "metric": query.metric,
            "status": query.status,
            "offset": query.offset,
            "limit": query.limit,
            "sort": query.sort,
            "order": query.order,
            "failing": query.failing,
        },
        "total": int(total),
        "metrics": names,
        "columns": [_column(m, counted[m], floor_of.get(m), registry) for m in names],
        "statuses": list(STATUSES),
        "cases": [
            {
                "id": case_id,
                "kind": kind,
                "question": _clip(question),
                "answer": _clip(answer),
                "results": per_case.get(case_id, {}),
            }
            for case_id, kind, question, answer, _ in rows
        ],
    }


def _column(
    metric: str, counts: tuple[int, int], floor: Floor | None, registry: Registry | None
) -> dict[str, Any]:
    scored, judge_errors = counts
    return {
        "metric": metric,
        "higher_is_better": True if registry is None else registry.higher_is_better(metric),
        "bounded": False if registry is None else registry.bounded(metric),
        "scored": scored,
        "judge_errors": judge_errors,
        # As ``summary.nothing_scored``: left out of the table until asked for.
        "unscored": not scored and not judge_errors,
        "floor": None if floor is None else {"min": floor.min, "max": floor.max},
    }


def _total(store: RunStore, run_id: str, query: CaseQuery, floors: Sequence[Floor]) -> int:
    # A page past the end has no row to carry the total: ask for the first page.
    first = CaseQuery(
        query.text, query.metric, query.status, 0, 1, query.sort, query.order, query.failing
    )
    return search_cases(store, run_id, first, floors)["total"]
