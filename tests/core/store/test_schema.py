"""The stored tables' decoders (store/schema.py): a result status ragproof does not know
(a store written by another version, or a damaged file) is one clear error naming the
file, the row and the case, whichever path reads it, and the command line prints it as
one line, exit 1; a run record's UTC times decode to the instants pyarrow gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragproof_cli import main
from ragproof_core.store import RunStore, UnknownStatus
from ragproof_core.store.schema import decode_case_results, encode_case_results, utc_datetimes
from tests.core.store import sample

KNOWN = "ragproof knows scored, skipped, not_applicable, judge_error, error"
ANOTHER_VERSION = "a store written by another version of ragproof?"


def waived(table, row: int):
    """``table`` with row ``row`` (0-based) given the status 'waived'."""
    statuses = table["status"].to_pylist()
    statuses[row] = "waived"
    return table.set_column(table.schema.get_field_index("status"), "status", [statuses])


def test_an_unknown_status_names_its_row_case_and_metric():
    table = encode_case_results("r1", sample.RESULTS)
    bad = waived(table, 4)
    with pytest.raises(UnknownStatus) as raised:
        decode_case_results(bad)
    row = sample.RESULTS[4]
    assert str(raised.value) == (
        f"row 5: case {row.case_id!r} metric {row.metric!r}: unknown status 'waived' "
        f"({KNOWN}; {ANOTHER_VERSION})"
    )
    assert decode_case_results(table) == sample.RESULTS


@pytest.fixture
def foreign_store(tmp_path, monkeypatch):
    """A finished run whose second shard file holds a status from another version."""
    store = RunStore(tmp_path / "store")
    sample.write_run(store, "r1")
    half = len(sample.RESULTS) // 2
    store.clear_results("r1")
    for shard, rows in enumerate((sample.RESULTS[:half], sample.RESULTS[half:])):
        with store.results_writer("r1", shard=shard) as writer:
            writer.write([], rows)
    second = sorted(store.case_result_files("r1"))[1]
    pq.write_table(waived(pq.read_table(second), 2), second)
    # Written so by that version: its catalog entry holds these files as they are (files
    # changed after the run ended would be a damaged run instead, CONTRACT section 29).
    store.write_run(sample.record("r1"))
    monkeypatch.setenv("RAGPROOF_STORE", str(tmp_path / "store"))
    bad = sample.RESULTS[half + 2]
    return store, (
        f"{second}: row 3: case {bad.case_id!r} metric {bad.metric!r}: unknown status "
        f"'waived' ({KNOWN}; {ANOTHER_VERSION})"
    )


def test_both_reading_paths_name_the_file_and_row(foreign_store):
    store, message = foreign_store
    with pytest.raises(UnknownStatus) as by_objects:
        list(store.iter_case_results("r1", batch_rows=2))
    with pytest.raises(UnknownStatus) as by_sql:
        store.tally_case_results("r1")
    assert str(by_objects.value) == str(by_sql.value) == message


def test_the_command_line_prints_it_as_one_line_exit_1(foreign_store, capsys):
    assert main(["report", "r1"]) == 1
    assert capsys.readouterr().err == f"ragproof: {foreign_store[1]}\n"


def test_utc_times_decode_to_the_instants_pyarrow_converts_them_to():
    moments = [
        datetime(2026, 12, 3, 6, 23, 42, 673599, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        None,
        datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=UTC),
    ]
    column = pa.chunked_array([moments[:2], moments[2:]], pa.timestamp("us", tz="UTC"))
    decoded = utc_datetimes(column)
    assert decoded == column.to_pylist() == moments
    assert {d.utcoffset() for d in decoded if d is not None} == {timedelta(0)}
