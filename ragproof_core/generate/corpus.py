"""The corpus a test set is generated from: JSON Lines of ``{"id", "text", "metadata"}``.

Validated as a whole before any judge call, like a dataset: the first bad line
raises ``DatasetError`` (``PATH:LINE: reason``). A chunk's document is
``metadata.document_id``, else the chunk's own id (the rule of ``Chunk.document_id``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import DatasetError, iter_json_lines


@dataclass(frozen=True, slots=True)
class CorpusChunk:
    id: str
    text: str
    document_id: str
    # As the line gave it (generate attacks reads its title and flags); not hashed.
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)

    def as_input(self) -> dict[str, str]:
        """The chunk as a prompt input (``{"id", "text"}``)."""
        return {"id": self.id, "text": self.text}


def load_corpus(path: str | Path) -> list[CorpusChunk]:
    path_text = str(path)
    chunks: list[CorpusChunk] = []
    first_line_of: dict[str, int] = {}
    for line, row in iter_json_lines(path_text):
        reason = _problem(row)
        if reason is not None:
            raise DatasetError(path_text, line, reason)
        earlier = first_line_of.setdefault(row["id"], line)
        if earlier != line:
            raise DatasetError(
                path_text, line, f"duplicate chunk id {row['id']!r} (first used on line {earlier})"
            )
        metadata = row.get("metadata") or {}
        document = metadata.get("document_id")
        chunks.append(
            CorpusChunk(
                row["id"],
                row["text"],
                row["id"] if document is None else str(document),
                metadata,
            )
        )
    if not chunks:
        raise DatasetError(path_text, 1, "corpus has no chunks")
    return chunks


def _problem(row: Any) -> str | None:
    if not isinstance(row, dict):
        return "expected a JSON object with id, text and metadata"
    if not isinstance(row.get("id"), str) or not row["id"].strip():
        return "'id' must be a non-empty string"
    if not isinstance(row.get("text"), str) or not row["text"].strip():
        return "'text' must be a non-empty string"
    metadata = row.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return "'metadata' must be a JSON object"
    return None
