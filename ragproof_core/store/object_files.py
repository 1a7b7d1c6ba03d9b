"""The store's file operations on object storage (S3, GCS, Azure) through fsspec.

Object stores have no rename and no locks, and need none here: every object
is written once, by one writer, and becomes visible whole when its upload
completes (a single PUT, or a multipart upload that is only assembled at the
end). A write that fails is aborted (``discard``), and a process killed
mid-write leaves at most an unfinished multipart upload, which no listing
shows. Nothing touches local disk: Parquet is encoded straight into the
upload buffer.

A run's visibility still rests on ``run.parquet`` being written last, as on
local disk (``run_store.py``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ragproof_core.store.files import ROW_GROUP_SIZE, LocalFiles

# Upload part size: fewer round trips for big tables, still bounded memory.
BLOCK_SIZE = 16 * 2**20


class ObjectFiles:
    is_remote = True

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def _write(self, path: PurePath, write) -> None:
        handle = self.fs.open(str(path), "wb", block_size=BLOCK_SIZE)
        try:
            write(handle)
        except BaseException:
            _abort(handle)
            raise
        handle.close()

    def write_parquet(self, path: PurePath, table: pa.Table) -> None:
        self._write(
            path,
            lambda f: pq.write_table(table, f, compression="zstd", row_group_size=ROW_GROUP_SIZE),
        )

    def write_parquet_batches(
        self, path: PurePath, schema: pa.Schema, batches: Iterable[pa.Table]
    ) -> None:
        def write(handle) -> None:
            with pq.ParquetWriter(handle, schema, compression="zstd") as writer:
                for batch in batches:
                    writer.write_table(batch, row_group_size=ROW_GROUP_SIZE)

        self._write(path, write)

    @contextmanager
    def parquet_writer(self, path: PurePath, schema: pa.Schema) -> Iterator[pq.ParquetWriter]:
        """A writer whose object appears at ``path`` on clean exit, and never otherwise."""
        handle = self.fs.open(str(path), "wb", block_size=BLOCK_SIZE)
        writer = None
        try:
            writer = pq.ParquetWriter(handle, schema, compression="zstd")
            yield writer
            writer.close()
        except BaseException:
            if writer is not None:
                # Closed before the abort, so it never writes into a discarded upload.
                with suppress(Exception):
                    writer.close()
            _abort(handle)
            raise
        handle.close()

    def write_json(self, path: PurePath, obj: Any) -> None:
        text = json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n"
        self._write(path, lambda f: f.write(text.encode("utf-8")))

    def read_text(self, path: PurePath) -> str:
        return self.fs.cat_file(str(path)).decode("utf-8")

    def read_many(self, paths: Sequence[PurePath]) -> list[bytes]:
        """The bytes of each of ``paths``, fetched concurrently (one ``cat`` of them all:
        s3fs, gcsfs and adlfs ask for every object at once), in the order given."""
        if not paths:
            return []
        found = self.fs.cat([str(p) for p in paths], on_error="raise")
        return [found[str(p)] for p in paths]

    def read_present(self, paths: Sequence[PurePath]) -> list[bytes | None]:
        """``read_many``, with None for each object gone since it was listed."""
        if not paths:
            return []
        found = self.fs.cat([str(p) for p in paths], on_error="omit")
        return [found.get(str(p)) for p in paths]

    def parquet_file(self, path: PurePath) -> pq.ParquetFile:
        """Raises FileNotFoundError when ``path`` does not exist."""
        return pq.ParquetFile(pa.BufferReader(self.fs.cat_file(str(path))))

    def is_file(self, path: PurePath) -> bool:
        return bool(self.fs.isfile(str(path)))

    def remove(self, path: PurePath) -> bool:
        try:
            self.fs.rm_file(str(path))
        except FileNotFoundError:
            return False
        return True

    def glob(self, pattern: str) -> list[PurePath]:
        """Objects matching ``pattern`` (a path inside the bucket, no protocol), sorted."""
        return sorted(PurePosixPath(p) for p in self.fs.glob(pattern))

    def write_bytes(self, path: PurePath, data: bytes) -> None:
        self._write(path, lambda f: f.write(data))

    def copy_in(self, local: Path, path: PurePath) -> None:
        """Upload the local file ``local`` to ``path`` (a file written outside the store)."""

        def write(handle) -> None:
            with open(local, "rb") as source:
                shutil.copyfileobj(source, handle, BLOCK_SIZE)

        self._write(path, write)

    def link(self, source: PurePath, path: PurePath) -> None:
        """``path`` becomes a copy of the object ``source``, copied by the object store
        itself (no byte passes through this process)."""
        self.fs.copy(str(source), str(path))

    def open_read(self, path: PurePath) -> Any:
        return self.fs.open(str(path), "rb", block_size=BLOCK_SIZE)

    def size(self, path: PurePath) -> int | None:
        try:
            return int(self.fs.info(str(path))["size"])
        except FileNotFoundError:
            return None

    def create_exclusive(self, path: PurePath, data: bytes) -> None:
        """Write ``path`` whole, or raise FileExistsError if it exists (``If-None-Match``)."""
        self.fs.pipe_file(str(path), data, mode="create")

    def walk(self, folder: PurePath) -> list[tuple[str, int]]:
        """Every object under ``folder`` (relative name, size), in name order."""
        try:
            found = self.fs.find(str(folder), detail=True)
        except FileNotFoundError:
            return []
        prefix = str(folder).rstrip("/") + "/"
        return sorted(
            (name[len(prefix) :], int(info["size"]))
            for name, info in found.items()
            if name.startswith(prefix) and info.get("type") != "directory"
        )

    def move(self, source: PurePath, target: PurePath) -> None:
        """Move an object, or every object under a folder (copied by the store, then
        deleted: object stores have no rename)."""
        if self.fs.isdir(str(source)):
            for name, _ in self.walk(source):
                self.fs.copy(str(source / name), str(target / name))
            self.fs.rm(str(source), recursive=True)
            return
        self.fs.copy(str(source), str(target))
        self.fs.rm_file(str(source))

    def remove_tree(self, folder: PurePath) -> None:
        with suppress(FileNotFoundError):
            self.fs.rm(str(folder), recursive=True)

    def ls(self, folder: str) -> list[str]:
        try:
            return sorted(self.fs.ls(folder, detail=False))
        except FileNotFoundError:
            return []


def _abort(handle) -> None:
    """Throw an upload away: closing it would publish the half-written object."""
    discard = getattr(handle, "discard", None)
    if discard is None:
        raise RuntimeError(f"{type(handle).__name__} cannot abort an upload")
    discard()
    # Buffered uploads (s3fs, gcsfs, adlfs) must not retry on close; fsspec's
    # memory file only publishes on close, which is never called.
    with suppress(AttributeError):
        handle.closed = True


def files_for(layout) -> Any:
    """``LocalFiles`` or ``ObjectFiles`` for the store of ``layout``."""
    return ObjectFiles(layout.fs) if layout.is_remote else LocalFiles()
