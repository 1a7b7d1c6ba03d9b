"""``ragproof import beir``: a BEIR dataset folder as cases (and, optionally, a corpus).

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/SPLIT.tsv``: a header line
``query-id corpus-id score``, then tab-separated rows.

Each query with a qrel of score > 0 in the split becomes a qa case (in
``queries.jsonl`` order) whose ``expected_source_ids`` keep the qrels' scores
as grades, in qrels order (CONTRACT section 19): an object of every judged doc
id with its score, zeros included, or the list of doc ids when every score is
1 (``writer.expected_sources``). ``queries.jsonl`` holds the queries of every split, so queries
without a relevant qrel in this split are left out. A query's ``metadata``
object, when it has one, is kept as the case's metadata.

The corpus is read only for ``--corpus-out``, streamed (BEIR corpora run to
millions of documents): one chunk ``{"id", "text", "metadata"}`` per document,
text = title, a blank line, then text (title omitted when empty); metadata is
the document's own ``metadata`` object, if any, plus its ``title``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import DatasetError, iter_json_lines
from ragproof_core.data.importers.reading import json_type, text_lines
from ragproof_core.data.importers.writer import IdRegistry, Imported, case_row, expected_sources

QRELS_HEADER = ("query-id", "corpus-id", "score")


def import_beir(folder: str | Path, split: str = "test") -> Imported:
    """The cases of one split of a BEIR folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetError(str(folder), 0, "no such folder")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        found = f" (splits here: {', '.join(splits)})" if splits else ""
        raise DatasetError(str(qrels_path), 0, f"no such file{found}")
    judged, qrel_line = read_qrels(qrels_path)
    queries_path = folder / "queries.jsonl"

    cases = []
    ids = IdRegistry(queries_path, key="_id")
    for line, row in iter_json_lines(queries_path):
        qid, text = _id_and_text(row, queries_path, line)
        ids.claim(qid, line)
        docids = expected_sources(judged.get(qid, {}))
        if docids is None:
            continue
        if not text.strip():
            raise DatasetError(str(queries_path), line, f"query {qid!r} has empty 'text'")
        metadata = row.get("metadata")
        cases.append(
            case_row(
                qid,
                text,
                expected_source_ids=docids,
                metadata=metadata if isinstance(metadata, dict) else None,
            )
        )
    for qid, line in qrel_line.items():
        if qid not in ids:
            raise DatasetError(
                str(qrels_path), line, f"query-id {qid!r} is not in {queries_path.name}"
            )
    return Imported(cases=cases)


def read_qrels(path: Path) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """(query id -> every doc id judged for it with its score in file order,
    query id -> its first qrels line)."""
    path_text = str(path)
    judged: dict[str, dict[str, int]] = {}
    first_line: dict[str, int] = {}
    pairs: dict[tuple[str, str], int] = {}
    lines = text_lines(path)
    header = next(lines, None)
    if header is None:
        raise DatasetError(path_text, 1, "empty qrels file: expected a header line")
    if tuple(header[1].split()) != QRELS_HEADER:
        raise DatasetError(
            path_text, header[0], "expected the header line 'query-id<TAB>corpus-id<TAB>score'"
        )
    for line, text in lines:
        fields = text.split("\t")
        if len(fields) != 3:
            raise DatasetError(
                path_text, line, f"expected 3 tab-separated fields, got {len(fields)}"
            )
        qid, docid, score_text = (field.strip() for field in fields)
        if not qid or not docid:
            raise DatasetError(path_text, line, "empty query-id or corpus-id")
        try:
            score = int(score_text)
        except ValueError:
            raise DatasetError(path_text, line, f"score {score_text!r} is not an integer") from None
        earlier = pairs.setdefault((qid, docid), line)
        if earlier != line:
            raise DatasetError(
                path_text,
                line,
                f"corpus-id {docid!r} is listed twice for query-id {qid!r} "
                f"(first on line {earlier})",
            )
        first_line.setdefault(qid, line)
        judged.setdefault(qid, {})[docid] = score
    return judged, first_line


def corpus_chunks(folder: str | Path) -> Iterator[dict[str, Any]]:
    """The corpus as chunks, one per document, validated as it streams."""
    path = Path(folder) / "corpus.jsonl"
    ids = IdRegistry(path, key="_id")
    for line, row in iter_json_lines(path):
        doc_id, text = _id_and_text(row, path, line)
        ids.claim(doc_id, line)
        title = row.get("title")
        if title is not None and not isinstance(title, str):
            raise DatasetError(str(path), line, f"'title' must be a string, got {json_type(title)}")
        source_metadata = row.get("metadata")
        metadata = dict(source_metadata) if isinstance(source_metadata, dict) else {}
        if title:
            metadata["title"] = title
        body = f"{title}\n\n{text}" if title else text
        yield {"id": doc_id, "text": body, "metadata": metadata}


def _id_and_text(row: Any, path: Path, line: int) -> tuple[str, str]:
    if not isinstance(row, dict):
        raise DatasetError(str(path), line, f"expected a JSON object, got {json_type(row)}")
    doc_id = row.get("_id")
    if doc_id is None:
        raise DatasetError(str(path), line, "missing required field '_id'")
    if not isinstance(doc_id, str) or not doc_id:
        raise DatasetError(
            str(path), line, f"'_id' must be a non-empty string, got {json_type(doc_id)}"
        )
    text = row.get("text")
    if not isinstance(text, str):
        raise DatasetError(
            str(path),
            line,
            "missing required field 'text'"
            if text is None
            else f"'text' must be a string, got {json_type(text)}",
        )
    return doc_id, text
