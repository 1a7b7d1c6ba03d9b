"""`ragproof sql` (CONTRACT section 7) on a local store; the S3 store is read the same
way in tests/assets/test_s3_store.py."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_cli import main
from ragproof_core.store.run_store import RunStore
from tests.assets.expected import NDCG_C2, RUN_ARGS
from tests.core.store import sample
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import tree_bytes
from tests.support.stores import StoreUnderTest


def test_sql_reads_the_views_as_a_table_and_as_json(store_path):
    done = ragproof(*RUN_ARGS, "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]

    rows = ragproof(
        "sql",
        "SELECT metric, scored, errored, mean FROM metric_summaries "
        "WHERE metric IN ('retrieval.mrr', 'retrieval.ndcg_at_k', 'retrieval.precision_at_k', "
        "'retrieval.recall_at_k') ORDER BY metric",
        "--json",
    )
    assert rows.returncode == 0, rows.stderr
    assert json.loads(rows.stdout) == [
        {"metric": "retrieval.mrr", "scored": 2, "errored": 2, "mean": 0.75},
        {
            "metric": "retrieval.ndcg_at_k",
            "scored": 2,
            "errored": 2,
            "mean": pytest.approx((NDCG_C2 + 1) / 2, abs=1e-15),
        },
        {"metric": "retrieval.precision_at_k", "scored": 2, "errored": 2, "mean": 0.2},
        {"metric": "retrieval.recall_at_k", "scored": 2, "errored": 2, "mean": 0.75},
    ]
    table = ragproof("sql", "SELECT run_id, status, cases FROM runs")
    assert table.returncode == 0, table.stderr
    width = len(run_id)
    assert table.stdout.splitlines() == [
        f"{'run_id'.ljust(width)}  status     cases",
        f"{'-' * width}  ---------  -----",
        f"{run_id}  completed  6",
    ]
    metrics = ragproof(
        "sql",
        "SELECT metric, family, higher_is_better, judged FROM metrics "
        "WHERE metric = 'generation.groundedness'",
        "--json",
    )
    assert json.loads(metrics.stdout) == [
        {
            "metric": "generation.groundedness",
            "family": "generation",
            "higher_is_better": True,
            "judged": True,
        }
    ]
    # Issue 39, item 6: on a query slower than two seconds DuckDB's progress bar printed
    # to stdout ahead of the JSON. The query runs with it off, so stdout is one document.
    bar = ragproof("sql", "SELECT current_setting('enable_progress_bar') AS bar", "--json")
    assert (bar.returncode, json.loads(bar.stdout)) == (0, [{"bar": False}])


def test_sql_refuses_writes_and_bad_queries_with_one_line(store_path, tmp_path):
    assert ragproof(*RUN_ARGS).returncode == 0
    before = sorted(p.relative_to(store_path) for p in store_path.rglob("*"))
    target = tmp_path / "out.csv"
    for query, message in [
        (
            f"COPY (SELECT * FROM runs) TO '{target}'",
            "only read-only queries (SELECT) are allowed, got COPY",
        ),
        ("DROP VIEW runs", "only read-only queries (SELECT) are allowed, got DROP"),
        ("SELECT 1; SELECT 2", "give exactly one statement, got 2"),
    ]:
        done = ragproof("sql", query)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == f"ragproof: sql: {message}\n"
    bad = ragproof("sql", "SELECT nope FROM runs")
    assert bad.returncode == 1
    assert bad.stderr.startswith('ragproof: sql: Binder Error: Referenced column "nope" not found')
    assert len(bad.stderr.splitlines()) == 1
    assert not target.exists()
    assert sorted(p.relative_to(store_path) for p in store_path.rglob("*")) == before


# Statement forms refused by DuckDB's parser before anything runs: (query, the
# statement type named in the message, or None for "more than one statement").
# {store} is the store's location, {run} a finished run's run.parquet.
REFUSED_STATEMENTS = [
    ("INSERT INTO runs SELECT * FROM runs", "INSERT"),
    ("UPDATE runs SET status = 'aborted:budget'", "UPDATE"),
    ("DELETE FROM runs", "DELETE"),
    ("CREATE TABLE t AS SELECT * FROM runs", "CREATE"),
    ("CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')", "CREATE"),
    ("CREATE MACRO m(a) AS a", "CREATE"),
    ("DROP VIEW runs", "DROP"),
    ("ALTER VIEW runs RENAME TO r", "ALTER"),
    (
        "MERGE INTO runs USING runs AS s ON runs.run_id = s.run_id WHEN MATCHED THEN DELETE",
        "MERGE_INTO",
    ),
    ("ATTACH '{store}/other.duckdb' AS other", "ATTACH"),
    ("DETACH memory", "DETACH"),
    ("INSTALL httpfs", "LOAD"),
    ("LOAD httpfs", "LOAD"),
    ("SET enable_external_access = true", "SET"),
    ("SET VARIABLE v = 1", "SET"),
    ("RESET allowed_directories", "SET"),
    ("USE memory", "SET"),
    ("PRAGMA enable_profiling", "PRAGMA"),
    ("COPY (SELECT * FROM runs) TO '{store}/out.csv'", "COPY"),
    ("COPY runs FROM '{store}/out.csv'", "COPY"),
    ("EXPORT DATABASE '{store}/export'", "EXPORT"),
    ("IMPORT DATABASE '{store}/export'", "PRAGMA"),
    ("CALL pragma_version()", "CALL"),
    ("CHECKPOINT", "CALL"),
    ("VACUUM", "VACUUM"),
    ("ANALYZE", "VACUUM"),
    ("PREPARE p AS SELECT 1", "PREPARE"),
    ("BEGIN TRANSACTION", "TRANSACTION"),
    ("EXPLAIN SELECT * FROM runs", "EXPLAIN"),
    (
        "EXPLAIN ANALYZE COPY (SELECT * REPLACE ('aborted:budget' AS status) "
        "FROM read_parquet('{run}')) TO '{run}'",
        "EXPLAIN",
    ),
    ("SELECT 1; SELECT 2", None),
    ("SELECT 1 -- a comment\n; DROP VIEW runs", None),
    ("SELECT 1 /* a comment */; COPY runs TO '{store}/out.csv'", None),
]

# Plain queries that name files the connection cannot reach: DuckDB refuses them.
UNREACHABLE_FILES = [
    "SELECT * FROM read_text('/proc/self/environ')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_json('{outside}/secret.json')",
    "SELECT * FROM read_parquet('{outside}/secret.parquet')",
    "SELECT * FROM read_parquet('{store}/../outside/secret.parquet')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM glob('{outside}/*')",
    "SELECT * FROM read_csv('{sibling}/secret.csv')",
    "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
    "SELECT * FROM read_text('https://example.com/')",
]


def _stored_run(location: str) -> str:
    store = RunStore(location)
    sample.write_run(store, "r1")
    return store.layout.url(store.layout.table_path("r1", "run"))


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def outside(tmp_path) -> str:
    """A local folder outside the store holding readable files."""
    folder = tmp_path / "outside"
    folder.mkdir()
    pq.write_table(pa.table({"secret": ["outside-parquet"]}), folder / "secret.parquet")
    (folder / "secret.json").write_text('{"secret": "outside-json"}')
    return str(folder)


def _sibling(any_store: StoreUnderTest, s3_server) -> str:
    """A folder or prefix next to the store whose name starts with the store's."""
    sibling = any_store.location.rstrip("/") + "-other"
    if any_store.kind == "local":
        Path(sibling).mkdir(exist_ok=True)
        (Path(sibling) / "secret.csv").write_text("secret\nsibling-csv\n")
    else:
        bucket, _, prefix = sibling.removeprefix("s3://").partition("/")
        s3_server.client().put_object(
            Bucket=bucket, Key=f"{prefix}/secret.csv", Body=b"secret\nsibling-csv\n"
        )
    return sibling


def test_sql_refuses_every_writing_or_escaping_form_and_changes_nothing(
    any_store: StoreUnderTest, s3_server, outside, capsys, monkeypatch
):
    # A secret in the environment, as the judge key and the AWS secret would be.
    monkeypatch.setenv("RAGPROOF_PLANTED_SECRET", "planted-env-secret-4711")
    run_parquet = _stored_run(any_store.location)
    names = {"store": any_store.location, "run": run_parquet, "outside": outside}
    names["sibling"] = _sibling(any_store, s3_server)
    code, out, err = _cli(capsys, "sql", "SELECT run_id, status FROM runs", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == [{"run_id": "r1", "status": "completed"}]
    before = any_store.snapshot()

    for query, kind in REFUSED_STATEMENTS:
        code, out, err = _cli(capsys, "sql", query.format(**names))
        expected = (
            f"only read-only queries (SELECT) are allowed, got {kind}"
            if kind
            else "give exactly one statement, got 2"
        )
        assert (code, out, err) == (1, "", f"ragproof: sql: {expected}\n"), query
    for query in UNREACHABLE_FILES:
        code, out, err = _cli(capsys, "sql", query.format(**names))
        assert (code, out) == (1, ""), query
        assert err.startswith("ragproof: sql: Permission Error: Cannot access file"), err
        assert len(err.splitlines()) == 1, err
        assert "planted-env-secret-4711" not in err

    assert any_store.snapshot() == before
    assert sorted(p.name for p in Path(outside).iterdir()) == ["secret.json", "secret.parquet"]


def test_sql_on_s3_cannot_read_or_write_another_bucket(s3_store, s3_server, capsys):
    _stored_run(s3_store)
    other = s3_server.new_bucket()
    s3_server.client().put_object(Bucket=other, Key="secret.csv", Body=b"secret\nother-bucket\n")
    assert _cli(capsys, "sql", "SELECT count(*) FROM runs")[0] == 0
    before = StoreUnderTest("s3", s3_store).snapshot()
    for query in [
        f"SELECT * FROM read_csv('s3://{other}/secret.csv')",
        f"SELECT * FROM read_text('s3://{other}/secret.csv')",
        f"SELECT * FROM glob('s3://{other}/*')",
        f"SELECT * FROM read_csv('{s3_store}/../../{other}/secret.csv')",
    ]:
        code, out, err = _cli(capsys, "sql", query)
        assert (code, out) == (1, ""), query
        assert err.startswith("ragproof: sql: Permission Error: Cannot access file"), err
    code, out, err = _cli(capsys, "sql", f"COPY (SELECT 1) TO 's3://{other}/pwned.csv'")
    assert (code, err) == (
        1,
        "ragproof: sql: only read-only queries (SELECT) are allowed, got COPY\n",
    )
    assert s3_server.keys(other) == ["secret.csv"]
    assert StoreUnderTest("s3", s3_store).snapshot() == before


def test_sql_reads_the_stores_own_files_and_runs_the_readme_queries(any_store, capsys):
    run_parquet = _stored_run(any_store.location)
    code, out, err = _cli(
        capsys, "sql", f"SELECT run_id, status FROM read_parquet('{run_parquet}')", "--json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == [{"run_id": "r1", "status": "completed"}]
    readme = [
        "select r.started_at, r.adapter, s.mean, s.scored, s.errored "
        "from metric_summaries s join runs r using (run_id) "
        "where s.metric = 'generation.groundedness' and r.dataset = 'golden.jsonl' "
        "order by r.started_at",
        "select run_id, case_id, any_value(reason) from case_results "
        "where status = 'error' group by all",
        "select run_id, status, cases, cost_usd from runs",
        "with m as (select metric, mean from metric_summaries) select count(*) as n from m",
    ]
    for query in readme:
        code, out, err = _cli(capsys, "sql", query, "--json")
        assert (code, err) == (0, ""), query
        assert json.loads(out), query


def test_the_issues_bypasses_through_the_real_command(store_path):
    run_parquet = _stored_run(str(store_path))
    env = cli_env(RAGPROOF_STORE=str(store_path), RAGPROOF_PLANTED_SECRET="planted-4711-secret")
    assert ragproof("sql", "SELECT count(*) FROM runs", env=env).returncode == 0
    before = tree_bytes(store_path)
    rewrite = (
        "EXPLAIN ANALYZE COPY (SELECT * REPLACE ('aborted:budget' AS status) "
        f"FROM read_parquet('{run_parquet}')) TO '{run_parquet}'"
    )
    done = ragproof("sql", rewrite, env=env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "ragproof: sql: only read-only queries (SELECT) are allowed, got EXPLAIN\n"
    )
    done = ragproof("sql", "SELECT * FROM read_text('/proc/self/environ')", env=env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("ragproof: sql: Permission Error: Cannot access file")
    assert "planted-4711-secret" not in done.stderr
    assert tree_bytes(store_path) == before
