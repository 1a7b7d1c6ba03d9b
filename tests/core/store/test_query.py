"""Read-only SQL over the store (``store/query.py``): the parser's allow-list, and the
confined connection that holds even when a statement gets past it. The refused
forms through the command, on a local and an S3 store: tests/cli/test_sql.py."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from ragproof_core.store import views
from ragproof_core.store.query import QueryRefused, check_read_only, run_read_only
from ragproof_core.store.run_store import RunStore
from tests.core.store import sample


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 1",
        "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
        "FROM runs SELECT run_id",
        "VALUES (1), (2)",
        "DESCRIBE runs",
        "SUMMARIZE runs",
        "(SELECT 1) UNION ALL (SELECT 2)",
        "SELECT 1 /* ; DROP VIEW runs */",
        "SELECT ';' AS semicolon; ",
    ],
)
def test_one_plain_query_passes_the_parser(query: str) -> None:
    check_read_only(query)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("EXPLAIN ANALYZE SELECT 1", "only read-only queries (SELECT) are allowed, got EXPLAIN"),
        ("COPY runs TO 'x.csv'", "only read-only queries (SELECT) are allowed, got COPY"),
        ("SELECT 1 -- hidden\n; DROP VIEW runs", "give exactly one statement, got 2"),
        ("", "give exactly one statement, got 0"),
    ],
)
def test_anything_else_is_refused_by_the_parser(query: str, message: str) -> None:
    with pytest.raises(QueryRefused, match=f"^{re.escape(message)}$"):
        check_read_only(query)


def test_a_syntax_error_is_one_line() -> None:
    with pytest.raises(QueryRefused, match="^Parser Error: syntax error") as raised:
        check_read_only("SELEC 1")
    assert "\n" not in str(raised.value)


def test_the_confined_connection_holds_without_the_parser(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store")
    sample.write_run(store, "r1")
    outside = tmp_path / "outside.csv"
    con = views.connect_confined(store.layout)
    try:
        assert con.execute("SELECT run_id FROM runs").fetchall() == [("r1",)]
        for statement in [
            "SET enable_external_access = true",
            "SET allowed_directories = ['/']",
            "RESET lock_configuration",
        ]:
            with pytest.raises(duckdb.InvalidInputException, match="configuration has been locked"):
                con.execute(statement)
        for statement in [
            f"COPY (SELECT 1) TO '{outside}'",
            "SELECT * FROM read_text('/etc/passwd')",
            "INSTALL httpfs",
            "LOAD httpfs",
        ]:
            with pytest.raises(duckdb.PermissionException):
                con.execute(statement)
    finally:
        con.close()
    assert not outside.exists()


def test_rows_come_back_with_their_columns(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store")
    sample.write_run(store, "r1")
    result = run_read_only(store.layout, "SELECT run_id, status FROM runs")
    assert (result.columns, result.rows) == (["run_id", "status"], [("r1", "completed")])
