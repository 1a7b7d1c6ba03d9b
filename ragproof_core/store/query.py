"""Read-only SQL over the store's views, as `ragproof sql` runs it (CONTRACT section 7).

Two locks, each enough on its own against what the other might miss:

- the statement: DuckDB's own parser splits the text and types each
  statement; only one plain query (``SELECT``, ``WITH ... SELECT``, ``FROM``,
  ``VALUES``, ``DESCRIBE``, ``SUMMARIZE``) is run. ``EXPLAIN`` is refused too:
  ``EXPLAIN ANALYZE`` executes the statement it explains.
- the connection (``views.connect_confined``): an in-memory database whose
  file access is limited to the store's own folder or prefix and whose
  configuration is locked, so no query can read ``/etc/passwd``,
  ``/proc/self/environ``, another bucket or a URL, install or load an
  extension, or turn the limits off.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from ragproof_core.store import damage, views
from ragproof_core.store.layout import StoreLayout

ALLOWED_STATEMENTS = frozenset({duckdb.StatementType.SELECT})


class QueryRefused(ValueError):
    """The text is not one read-only query, or DuckDB could not run it; one line."""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]


def check_read_only(query: str) -> None:
    """Refuse anything but exactly one plain query; parsing alone, nothing is opened."""
    try:
        with duckdb.connect(":memory:") as parser:
            statements = parser.extract_statements(query)
    except duckdb.Error as exc:
        raise QueryRefused(_first_line(exc)) from None
    if len(statements) != 1:
        raise QueryRefused(f"give exactly one statement, got {len(statements)}")
    kind = statements[0].type
    if kind not in ALLOWED_STATEMENTS:
        raise QueryRefused(f"only read-only queries (SELECT) are allowed, got {kind.name}")


def run_read_only(
    layout: StoreLayout, query: str, found_damaged: dict[str, str] | None = None
) -> QueryResult:
    """Rows of ``query`` over the views of ``layout``'s store, read-only and confined.

    A run whose file cannot be read is found on read (CONTRACT section 29): marked
    damaged (or, on a store that cannot be written, left out by this query alone) and
    the query run again without it (``damage.retrying``), so one damaged run never fails
    a query of the rest. ``found_damaged``: runs the caller found damaged beforehand
    (run -> file), left out even where the store could not take their mark.
    """
    check_read_only(query)

    def attempt(found: dict[str, str]) -> QueryResult:
        con = views.connect_confined(layout, found)
        try:
            cursor = con.execute(query)
            columns = [d[0] for d in cursor.description or []]
            return QueryResult(columns, cursor.fetchall())
        finally:
            con.close()

    try:
        return damage.retrying(layout, attempt, found_damaged)
    except duckdb.Error as exc:
        raise QueryRefused(_first_line(exc)) from None
