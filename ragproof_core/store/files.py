"""Atomic file writes: a reader sees the old file, the new file, or no file, never half of one.

Each write goes to a temp file in the destination folder, is fsynced, then
``os.replace``d over the destination (atomic within one filesystem) and the
folder is fsynced so the rename survives a crash. Temp names start with a dot
and do not end in ``.parquet``, so the views' ``*/<table>.parquet`` globs never
match a file being written or left behind by a killed process.
"""

from __future__ import annotations

import glob as globbing
import json
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

TEMP_MARKER = ".tmp-"

# DuckDB scans a row group per thread; its own default size keeps big
# case_results files parallel to read without bloating small ones.
ROW_GROUP_SIZE = 122_880


def temp_path_for(final: Path) -> Path:
    """``.<name>.tmp-<pid>-<random>`` beside ``final``; the random part keeps threads apart."""
    return final.with_name(f".{final.name}{TEMP_MARKER}{os.getpid()}-{secrets.token_hex(4)}")


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and TEMP_MARKER in name


def _fsync_path(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temp path to write; on clean exit it atomically becomes ``final``.

    On any exception the temp file is removed and ``final`` is untouched. A
    process killed inside the block leaves only the temp file behind.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path_for(final)
    try:
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, final)
    except BaseException as exc:
        with suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
            # A writer that names no file (pyarrow's full disk): the fault names it.
            raise OSError(exc.errno, os.strerror(exc.errno), str(final)) from None
        raise
    _fsync_path(final.parent, directory=True)


def write_parquet(path: Path, table: pa.Table) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", row_group_size=ROW_GROUP_SIZE)


def write_parquet_batches(path: Path, schema: pa.Schema, batches: Iterable[pa.Table]) -> None:
    """Write tables of one schema to one Parquet file, a batch at a time.

    A large run is encoded and written in slices, so its Arrow copy never sits in
    memory whole beside the Python objects it came from.
    """
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for batch in batches:
            writer.write_table(batch, row_group_size=ROW_GROUP_SIZE)


def write_json(path: Path, obj: Any) -> None:
    text = json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n"
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_lines(path: Path, text: str) -> None:
    """Write already-encoded JSON Lines atomically (a label sample, for instance)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def remove(path: Path) -> bool:
    """Delete ``path`` durably; returns False when it did not exist."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    _fsync_path(path.parent, directory=True)
    return True


class LocalFiles:
    """The store's file operations on local disk: atomic rename and fsync (above).

    ``ObjectFiles`` (``object_files.py``) has the same methods for object storage.
    """

    is_remote = False

    def write_parquet(self, path: Path, table: pa.Table) -> None:
        write_parquet(path, table)

    def write_parquet_batches(
        self, path: Path, schema: pa.Schema, batches: Iterable[pa.Table]
    ) -> None:
        write_parquet_batches(path, schema, batches)

    def write_json(self, path: Path, obj: Any) -> None:
        write_json(path, obj)

    def write_bytes(self, path: Path, data: bytes) -> None:
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)

    def copy_in(self, local: Path, path: Path) -> None:
        """``path`` becomes the local file ``local`` (a file written outside the store, which
        the caller never writes again): hard-linked where the filesystem allows, else
        copied. The run's 48 MB staged recording was copied byte for byte before."""
        self.link(local, path)

    def link(self, source: Path, path: Path) -> None:
        """``path`` becomes the file ``source`` is (a hard link; a copy where the
        filesystem has none), atomically like every write here."""
        with atomic_path(path) as tmp:
            try:
                os.link(source, tmp)
            except OSError:
                shutil.copyfile(source, tmp)

    @contextmanager
    def parquet_writer(self, path: Path, schema: pa.Schema) -> Iterator[pq.ParquetWriter]:
        """A writer whose file appears atomically at ``path`` on clean exit."""
        with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as w:
            yield w

    def read_text(self, path: Path) -> str:
        return Path(path).read_text(encoding="utf-8")

    def read_many(self, paths: Sequence[Path]) -> list[bytes]:
        """The bytes of each of ``paths``, in the order given."""
        return [Path(p).read_bytes() for p in paths]

    def read_present(self, paths: Sequence[Path]) -> list[bytes | None]:
        """``read_many``, with None for each file gone since it was listed."""
        found: list[bytes | None] = []
        for path in paths:
            try:
                found.append(Path(path).read_bytes())
            except FileNotFoundError:
                found.append(None)
        return found

    def parquet_file(self, path: Path) -> pq.ParquetFile:
        """Raises FileNotFoundError when ``path`` does not exist."""
        return pq.ParquetFile(path)

    def is_file(self, path: Path) -> bool:
        return Path(path).is_file()

    def remove(self, path: Path) -> bool:
        return remove(Path(path))

    def glob(self, pattern: str) -> list[Path]:
        """Files matching an absolute glob, sorted; temp files never match ``*.parquet``."""
        return sorted(Path(p) for p in globbing.glob(pattern))

    def open_read(self, path: Path) -> BinaryIO:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it

    def size(self, path: Path) -> int | None:
        """The file's size in bytes; None when it does not exist."""
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            return None

    def create_exclusive(self, path: Path, data: bytes) -> None:
        """Write ``path`` whole, or raise FileExistsError if it exists (never replaced):
        a temp file hard-linked into place, which fails if the name is taken."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_path_for(path)
        try:
            tmp.write_bytes(data)
            _fsync_path(tmp)
            os.link(tmp, path)
        finally:
            with suppress(FileNotFoundError):
                tmp.unlink()
        _fsync_path(path.parent, directory=True)

    def walk(self, folder: Path) -> list[tuple[str, int]]:
        """Every file under ``folder`` (relative name, size), in name order; none if absent."""
        found = []
        for directory, _, names in os.walk(folder):
            for name in names:
                path = Path(directory) / name
                with suppress(FileNotFoundError):
                    found.append((path.relative_to(folder).as_posix(), path.stat().st_size))
        return sorted(found)

    def move(self, source: Path, target: Path) -> None:
        """Move a file or folder within the store (a rename)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)

    def remove_tree(self, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
