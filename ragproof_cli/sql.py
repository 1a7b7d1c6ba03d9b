"""`ragproof sql "QUERY" [--json]`: read-only SQL over the store's views, wherever it is
(CONTRACT section 7).

The query runs on an in-memory DuckDB connection holding the views, confined
to the store's files with its configuration locked, and only when DuckDB's
parser finds one plain query in it (``ragproof_core/store/query.py``).
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import math

from ragproof_cli.common import EXIT_OK, UsageError, open_store, print_json, warn_damaged
from ragproof_core.store import QueryRefused, QueryResult, run_read_only
from ragproof_core.store.query import check_read_only


def _json_value(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def _table(columns: list[str], rows: list[tuple]) -> str:
    cells = [[("NULL" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def run_query(query: str) -> QueryResult:
    store = open_store()
    try:
        check_read_only(query)
        # The newest runs' files checked as `ragproof runs` checks them (CONTRACT section
        # 29): a run damaged since its rows were compacted is `damaged` here too.
        found = store.check_newest()
        return run_read_only(store.layout, query, found)
    except QueryRefused as exc:
        raise UsageError(f"sql: {exc}") from None


def cmd_sql(args: argparse.Namespace) -> int:
    result = run_query(args.query)
    warn_damaged(open_store())
    columns, rows = result.columns, result.rows
    if args.json:
        print_json([{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows])
    else:
        print(_table(columns, rows))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    sql = sub.add_parser(
        "sql",
        help="read-only SQL over the runs, case_results, metric_summaries, outputs and "
        "metrics views",
    )
    sql.add_argument("query", help='e.g. "SELECT run_id, status FROM runs"')
    sql.add_argument("--json", action="store_true", help="print a JSON array of row objects")
    sql.set_defaults(func=cmd_sql)
