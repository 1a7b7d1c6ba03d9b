"""`ragproof sql "QUERY" [--json]`: read-only SQL over the store's views, wherever it is
(CONTRACT section 7).

A local store is read through ``ragproof.duckdb`` opened read-only; a remote
one through an in-memory DuckDB connection reading the bucket via fsspec
(``views.connect_remote``). Only statements that read are run: a ``COPY ...
TO`` or an ``ATTACH`` could otherwise write through the same connection.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import math

from ragproof_cli.common import EXIT_OK, UsageError, open_store, print_json

_READ_STATEMENTS = ("SELECT", "EXPLAIN")


def _statement_types(con, query: str) -> list[str]:
    import duckdb

    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise UsageError(f"sql: {str(exc).splitlines()[0]}") from None
    return [statement.type.name for statement in statements]


def check_read_only(con, query: str) -> None:
    """Refuse anything but one reading statement (bad input, exit 1)."""
    types = _statement_types(con, query)
    if len(types) != 1:
        raise UsageError(f"sql: give exactly one statement, got {len(types)}")
    if types[0] not in _READ_STATEMENTS:
        raise UsageError(f"sql: only read-only queries (SELECT) are allowed, got {types[0]}")


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


def run_query(query: str) -> tuple[list[str], list[tuple]]:
    import duckdb

    con = open_store().connect(read_only=True)
    try:
        check_read_only(con, query)
        try:
            cursor = con.execute(query)
        except duckdb.Error as exc:
            raise UsageError(f"sql: {str(exc).splitlines()[0]}") from None
        columns = [d[0] for d in cursor.description or []]
        return columns, cursor.fetchall()
    finally:
        con.close()


def cmd_sql(args: argparse.Namespace) -> int:
    columns, rows = run_query(args.query)
    if args.json:
        print_json([{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows])
    else:
        print(_table(columns, rows))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    sql = sub.add_parser(
        "sql",
        help="read-only SQL over the runs, case_results, metric_summaries and metrics views",
    )
    sql.add_argument("query", help='e.g. "SELECT run_id, status FROM runs"')
    sql.add_argument("--json", action="store_true", help="print a JSON array of row objects")
    sql.set_defaults(func=cmd_sql)
