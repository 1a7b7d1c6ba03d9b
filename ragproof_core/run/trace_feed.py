"""The trace files of ``RAGPROOF_TRACES`` (CONTRACT section 18): list them, and import one
into a dataset and a recording the evaluation run reads.

``RAGPROOF_TRACES`` is a local folder or an fsspec URL (``s3://bucket/prefix``, with
credentials and endpoint from the standard AWS variables, as the store reads them).
Every ``.json`` and ``.jsonl`` file under it is an OTLP/JSON trace file. Each file is
imported on its own, sampled with ``[traces] sample`` and ``seed``, into its own
folder under the work folder: ``<workdir>/<name>-<hash>/cases.jsonl`` and
``outputs.jsonl``, the hash taken of the file's full path so two files of one name
in different folders do not meet.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ragproof_core.config.traces import TracesSettings
from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.otlp import import_otlp
from ragproof_core.data.importers.writer import write_files
from ragproof_core.store.remote import local_path, open_filesystem, split_url

TRACE_SUFFIXES: tuple[str, ...] = (".json", ".jsonl")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class ImportedFile:
    """One trace file imported: where its cases and recording are, and what it held."""

    source: str
    cases_path: Path
    outputs_path: Path
    cases: int
    notes: tuple[str, ...]


def list_trace_files(location: str) -> list[str]:
    """Every trace file under ``location``, as full paths or URLs, sorted."""
    remote = split_url(location)
    if remote is None:
        root = local_path(location)
        if not root.is_dir():
            raise FileNotFoundError(f"RAGPROOF_TRACES {location!r}: no such folder")
        return sorted(
            str(path) for path in root.rglob("*") if path.is_file() and _is_trace(path.name)
        )
    protocol, path = remote
    filesystem = open_filesystem(protocol)
    return sorted(
        f"{protocol}://{found}"
        for found in filesystem.find(path)
        if _is_trace(found.rsplit("/", 1)[-1])
    )


def _is_trace(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES) and not name.startswith(".")


def import_trace_file(source: str, workdir: Path, settings: TracesSettings) -> ImportedFile:
    """Import ``source`` alone, sampled by ``settings``, into its folder under ``workdir``.
    Bad input raises ``DatasetError`` naming ``source`` (not a downloaded copy)."""
    target = workdir / _folder_name(source)
    remote = split_url(source)
    if remote is None:
        imported = import_otlp([source], settings.sample, settings.seed)
    else:
        protocol, path = remote
        with tempfile.TemporaryDirectory(prefix="ragproof-traces-") as scratch:
            copy = os.path.join(scratch, path.rsplit("/", 1)[-1])
            open_filesystem(protocol).get_file(path, copy)
            try:
                imported = import_otlp([copy], settings.sample, settings.seed)
            except DatasetError as exc:
                raise DatasetError(source, exc.line, exc.reason) from None
    cases_path, outputs_path = target / "cases.jsonl", target / "outputs.jsonl"
    target.mkdir(parents=True, exist_ok=True)
    counts = write_files([(cases_path, imported.cases), (outputs_path, imported.outputs or [])])
    return ImportedFile(source, cases_path, outputs_path, counts[0], tuple(imported.notes))


def _folder_name(source: str) -> str:
    name = _UNSAFE.sub("_", source.rstrip("/").rsplit("/", 1)[-1])[:80]
    return f"{name}-{hashlib.sha256(source.encode()).hexdigest()[:12]}"
