"""Each stored table is declared once (store/tables.py): the Parquet schemas, the views'
columns and the run record all follow the declaration."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq

from ragproof_core.store import calibrations, schema, tables, views
from ragproof_core.store.run_store import RunStore
from ragproof_core.store.schema import RunRecord
from tests.core.store import sample

VIEW_OF = {"run": "runs", "case_results": "case_results", "metric_summaries": "metric_summaries"}


def test_every_table_starts_with_run_id_and_declares_each_column_once():
    for table in (*tables.TABLES.values(), tables.CALIBRATIONS):
        assert table.names[0] == "run_id", table.name
        assert len(set(table.names)) == len(table.names), table.name
        assert all(c.description for c in table.columns), table.name


def test_the_parquet_schemas_are_the_declared_columns():
    assert set(schema.SCHEMAS) == set(tables.TABLES)
    for name, table in tables.TABLES.items():
        stored = schema.SCHEMAS[name]
        assert stored.names == list(table.names)
        assert [(f.type, f.nullable) for f in stored] == [
            (c.type, c.nullable) for c in table.columns
        ]
    assert calibrations.CALIBRATIONS_SCHEMA.names == list(tables.CALIBRATIONS.names)


def test_the_views_columns_are_the_declared_columns(store: RunStore):
    sample.write_run(store, "r1")
    with store.connect() as con:
        for table, view in VIEW_OF.items():
            described = [row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()]
            # The runs view adds the catalog's damaged_file (CONTRACT section 29).
            extra = ["damaged_file"] if view == "runs" else []
            assert described == [*tables.TABLES[table].names, *extra], view
        described = [row[0] for row in con.execute("DESCRIBE calibrations").fetchall()]
        assert described == list(tables.CALIBRATIONS.names)


def test_the_run_record_holds_exactly_the_run_tables_columns(store: RunStore):
    fields = [f.name for f in dataclasses.fields(RunRecord)]
    # Then the catalog's word on a damaged run, never stored in the record.
    assert fields == [*(c.attribute for c in tables.RUN.columns), "damaged_file"]

    record = dataclasses.replace(
        sample.record("r1"),
        judge_mode="combined",
        judge_repairs=2,
        judge_usage=[{"metric": "generation.groundedness", "requests": 3}],
        judge_agreement={"generation.groundedness": {"alpha": 0.5}},
    )
    sample.write_run(store, "r1")
    store.write_run(record)
    assert store.get_run("r1") == record
    stored = pq.read_table(store.layout.table_path("r1", "run"))
    assert stored.schema.names == list(tables.RUN.names)
    assert stored.column("judge_usage_json").to_pylist() == [
        '[{"metric": "generation.groundedness", "requests": 3}]'
    ]


def test_a_run_file_older_than_its_counters_reads_them_as_zero():
    old = schema.encode_run(sample.record("r1")).drop_columns(
        ["judge_repairs", "judge_usage_json", "cost_usd"]
    )
    (record,) = schema.decode_runs(old)
    assert (record.judge_repairs, record.judge_usage, record.cost_usd) == (0, [], 0.0)
    assert tables.RUN.names == views.RUNS_COLUMNS
