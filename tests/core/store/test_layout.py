from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from ragproof_core.store.layout import InvalidRunId, StoreLayout, new_run_id, validate_run_id


@pytest.mark.parametrize(
    "bad", ["../x", "..", ".", "", "a/b", "a\\b", ".hidden", "_schema", "-x", "a b", "x" * 129]
)
def test_validate_run_id_rejects_unsafe_names(bad: str) -> None:
    with pytest.raises(InvalidRunId, match="invalid run id"):
        validate_run_id(bad)


@pytest.mark.parametrize("good", ["r1", "20261129T215000Z-3f9a1c", "A.b_c-d", "x" * 128])
def test_validate_run_id_accepts_plain_names(good: str) -> None:
    assert validate_run_id(good) == good


def test_layout_paths_stay_inside_the_run_folder() -> None:
    layout = StoreLayout(Path("/srv/store"))
    assert layout.table_path("r1", "case_results") == Path(
        "/srv/store/runs/r1/case_results.parquet"
    )
    assert layout.manifest_path("r1") == Path("/srv/store/runs/r1/manifest.json")
    assert layout.schema_path("run") == Path("/srv/store/runs/_schema/run.parquet")
    assert layout.duckdb_path == Path("/srv/store/ragproof.duckdb")
    assert layout.judge_cache_path == Path("/srv/store/judge_cache.sqlite")
    assert layout.table_glob("outputs") == "/srv/store/runs/*/outputs*.parquet"
    assert layout.table_glob("run") == "/srv/store/runs/*/run.parquet"
    with pytest.raises(InvalidRunId):
        layout.run_dir("../x")
    with pytest.raises(ValueError, match="unknown store table 'cases'"):
        layout.table_path("r1", "cases")


def test_layout_root_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert StoreLayout(Path("data/store")).root == tmp_path.resolve() / "data" / "store"


def test_table_glob_refuses_roots_duckdb_would_read_as_globs() -> None:
    with pytest.raises(ValueError, match="glob characters"):
        StoreLayout(Path("/srv/st[ore]")).table_glob("run")


def test_new_run_id_is_a_sortable_utc_timestamp_with_random_suffix() -> None:
    moment = datetime(2026, 11, 29, 22, 50, 0, tzinfo=timezone(timedelta(hours=1)))
    first = new_run_id(now=moment)
    second = new_run_id(now=moment)
    assert re.fullmatch(r"20261129T215000Z-[0-9a-f]{6}", first)
    assert first != second
    fresh = new_run_id()
    assert validate_run_id(fresh) == fresh
    later = new_run_id(now=datetime(2026, 11, 29, 21, 50, 1, tzinfo=UTC))
    assert later > first
