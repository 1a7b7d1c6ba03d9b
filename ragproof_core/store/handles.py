"""What the evaluation assets hand each other through Dagster: a ``StoredTable``.

A run's tables are written by the steps that produce them, straight into the
run store, a batch at a time (a shard's rows never pass through another
process, and no step holds a whole table). What travels through Dagster's IO
management is the handle on them: which run, which table, how many rows and
which objects hold it. Downstream steps load the handle and stream the rows
from the store it names, on whatever machine they run, so Dagster's lineage
carries real data rather than ``Nothing`` with a side channel beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragproof_core.store.layout import TABLES


@dataclass(frozen=True, slots=True)
class StoredTable:
    location: str  # the store: a local folder or an fsspec URL (never credentials)
    run_id: str
    table: str  # one of layout.TABLES
    rows: int
    files: tuple[str, ...]  # the Parquet objects holding it, as paths or URLs

    def __post_init__(self) -> None:
        if self.table not in TABLES:
            raise ValueError(f"unknown table {self.table!r}; known: {', '.join(TABLES)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "run_id": self.run_id,
            "table": self.table,
            "rows": self.rows,
            "files": list(self.files),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredTable:
        return cls(
            location=str(data["location"]),
            run_id=str(data["run_id"]),
            table=str(data["table"]),
            rows=int(data["rows"]),
            files=tuple(str(f) for f in data["files"]),
        )
