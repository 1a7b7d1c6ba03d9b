"""One store, local or on S3 (moto), behind the same few test helpers, so the
fault and concurrency tests run against both kinds of store unchanged."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ragproof_core.store.run_store import RunStore
from tests.support.snapshot import tree_bytes


@dataclass
class StoreUnderTest:
    kind: str  # "local" or "s3"
    location: str  # the RAGPROOF_STORE value

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        """Rows of ``sql`` over the store's views, read-only, as a user would read them."""
        if self.kind == "local":
            path = Path(self.location) / "ragproof.duckdb"
            with duckdb.connect(str(path), read_only=True) as con:
                return con.execute(sql, params or []).fetchall()
        with RunStore(self.location).connect(read_only=True) as con:
            return con.execute(sql, params or []).fetchall()

    def snapshot(self) -> dict[str, bytes]:
        """Every file of the store (path -> bytes), to prove a command changed nothing."""
        if self.kind == "local":
            return tree_bytes(Path(self.location))
        layout = RunStore(self.location).layout
        layout.fs.invalidate_cache()
        return {path: layout.fs.cat_file(path) for path in sorted(layout.fs.find(str(layout.root)))}

    def cache_rows(self) -> list[tuple[str, str, str]]:
        """Every stored (model, prompt hash, input hash) row of the judge cache. A local
        cache holds a key once; remote segments may hold it once per writer that paid."""
        store = RunStore(self.location)
        if self.kind == "local":
            path = store.layout.judge_cache_path
            if not path.exists():
                return []
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                return con.execute(
                    "select model, prompt_hash, input_hash from judge_replies"
                ).fetchall()
            except sqlite3.OperationalError:  # the table is not created yet
                return []
            finally:
                con.close()
        location = store.layout.judge_cache_path
        rows = []
        for path in store.files.glob(f"{location.root}/*.jsonl"):
            for line in store.files.read_text(path).splitlines():
                if line.strip():
                    row = json.loads(line)
                    rows.append((row["model"], row["prompt_hash"], row["input_hash"]))
        return rows

    def run_folders(self) -> list[str]:
        """Run ids with a folder (a manifest) in the store, finished or not."""
        store = RunStore(self.location)
        paths = store.files.glob(str(store.layout.runs_dir / "*" / "manifest.json"))
        return sorted(p.parent.name for p in paths)

    def has_file(self, run_id: str, name: str) -> bool:
        store = RunStore(self.location)
        return store.files.is_file(store.layout.run_dir(run_id) / name)
