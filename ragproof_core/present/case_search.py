"""Find a run's cases by text and by a metric's status (CONTRACT section 22).

The text matches, case-insensitively and as a substring, the case id, the
question or the answer. The status filter keeps the cases where a metric
(or, with none named, any metric) has that status. One SQL statement over
the run's own Parquet files finds the page of matches and their total, so
a 100,000-case run costs one scan, not 100,000 decoded cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragproof_core.model import Status
from ragproof_core.present.run_files import reader, table_files
from ragproof_core.store.run_store import RunStore

STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
PAGE_SIZE = 50
TEXT_CHARS = 300  # question and answer, as shown in a result row


@dataclass(frozen=True, slots=True)
class CaseQuery:
    text: str = ""
    metric: str = ""  # "" = any metric
    status: str = ""  # "" = any status
    offset: int = 0
    limit: int = PAGE_SIZE


def _clip(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    return {"t": text[:TEXT_CHARS], "cut": max(0, len(text) - TEXT_CHARS)}


def search_cases(store: RunStore, run_id: str, query: CaseQuery) -> dict[str, Any]:
    """The matching page of cases (dataset order) with their per-metric results and the total."""
    dataset = table_files(store, [run_id], "dataset")
    outputs = table_files(store, [run_id], "outputs")
    results = table_files(store, [run_id], "case_results")
    if not (dataset and outputs and results):
        store.get_run(run_id)  # RunNotFound for an unknown or unfinished run
        raise FileNotFoundError(f"run {run_id!r} has no stored cases")
    needle = query.text.strip().lower()
    # Only the filters asked for are in the statement: no scan of the results for a
    # text search alone, no text scan for a status filter alone.
    where, params = [], [dataset, outputs]
    if needle:
        where.append(
            "(contains(lower(d.id), ?) OR contains(lower(d.question), ?) "
            "OR contains(lower(coalesce(o.answer_text, '')), ?))"
        )
        params += [needle, needle, needle]
    if query.status or query.metric:
        tests = [t for t, v in (("metric = ?", query.metric), ("status = ?", query.status)) if v]
        where.append(
            "d.id IN (SELECT case_id FROM read_parquet(?, union_by_name = true) "
            f"WHERE {' AND '.join(tests)})"
        )
        params += [results, *(v for v in (query.metric, query.status) if v)]
    sql = (
        "SELECT d.id, d.kind, d.question, o.answer_text, count(*) OVER () AS total "
        "FROM read_parquet(?, file_row_number = true) AS d "
        "LEFT JOIN read_parquet(?, union_by_name = true) AS o ON o.case_id = d.id "
        + (f"WHERE {' AND '.join(where)} " if where else "")
        + "ORDER BY d.file_row_number LIMIT ? OFFSET ?"
    )
    with reader(store) as con:
        rows = con.execute(sql, [*params, query.limit, query.offset]).fetchall()
        ids = [row[0] for row in rows]
        scores = con.execute(
            "SELECT case_id, metric, status, value FROM read_parquet(?, union_by_name = true) "
            "WHERE list_contains(?, case_id)",
            [results, ids],
        ).fetchall()
        metrics = [
            m
            for (m,) in con.execute(
                "SELECT DISTINCT metric FROM read_parquet(?, union_by_name = true)", [results]
            ).fetchall()
        ]
    per_case: dict[str, dict[str, list[Any]]] = {}
    for case_id, metric, status, value in scores:
        per_case.setdefault(case_id, {})[metric] = [status, value]
    total = rows[0][4] if rows else _total(store, run_id, query) if query.offset else 0
    return {
        "query": {
            "text": query.text,
            "metric": query.metric,
            "status": query.status,
            "offset": query.offset,
            "limit": query.limit,
        },
        "total": int(total),
        "metrics": metrics,
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


def _total(store: RunStore, run_id: str, query: CaseQuery) -> int:
    # A page past the end has no row to carry the total: ask for the first page.
    first = CaseQuery(query.text, query.metric, query.status, 0, 1)
    return search_cases(store, run_id, first)["total"]
