"""A ``RetrievalBatch`` built from Arrow list columns, with no Python per case.

What ``BatchBuilder`` does one case at a time (deduplicate the ranking, look up
each ranked id's grade), done here over a whole batch in a few numpy calls:
every id of the batch, ranked or judged, becomes an integer code from one
shared dictionary (``dictionary_encode``); a (case, code) pair is one int64
key, so keeping each id's first rank is keeping each key's first occurrence
(one stable sort of the keys) and a judged id's grade goes to its first ranked
occurrence, found by a binary search among the sorted keys. The result equals ``BatchBuilder``'s
array for array (tests/core/metrics/test_retrieval_batch_columns.py).

The inputs are the store's own columns (``store.tables``): the dataset's
``expected_source_ids`` and ``expected_source_grades_json``, and the outputs'
``retrieved`` chunk lists. Two things still take Python per item, and only
where they occur: a case whose judgments are graded (its grades are stored as
JSON text) and, with ``source_match = "document"``, a chunk whose metadata
names a ``document_id`` (metadata is stored as JSON text too).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ragproof_core.metrics.retrieval_batch import (
    RELEVANT,
    UNJUDGED,
    RetrievalBatch,
    case_index,
    offsets,
    rank_within_case,
)


@dataclass(frozen=True, slots=True)
class IdLists:
    """One list of ids per case as flat arrays: ``counts[i]`` ids of case i, case
    after case, in ``ids``; ``grades`` the grade of each (None: grade 1 each)."""

    counts: np.ndarray
    ids: pa.Array
    grades: np.ndarray | None = None

    @classmethod
    def of(cls, lists: pa.Array, grades: pa.Array | None = None) -> IdLists:
        """From a list array (a null list is an empty one) and optionally a list array
        of the same shape holding each id's grade."""
        counts = lists.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
        flat = grades.flatten().to_numpy(zero_copy_only=False) if grades is not None else None
        return cls(counts.astype(np.int64), lists.flatten(), flat)

    def select(self, cases: np.ndarray) -> IdLists:
        """The lists of the cases where ``cases`` (one bool per case) holds."""
        entries = np.repeat(cases, self.counts)
        return IdLists(
            self.counts[cases],
            self.ids.filter(pa.array(entries)),
            None if self.grades is None else self.grades[entries],
        )


def sorted_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``keys`` sorted (a stable sort: equal keys keep their order), the sorting order,
    and which sorted entries are a key's first occurrence in ``keys``."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return ordered, order, first


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """True at each key's first occurrence in ``keys``."""
    _, order, first = sorted_keys(keys)
    kept = np.zeros(len(keys), dtype=bool)
    kept[order[first]] = True
    return kept


# Whole cases per ``dictionary_encode`` call, about this many ids each. A 20,000-case
# batch held ~50,000 distinct ids: one hash table for them all outgrew the CPU's
# cache and each lookup missed it (measured: twice the time of tables this size).
IDS_PER_PIECE = 1 << 15


def piece_bounds(ranked: IdLists, judged: IdLists, ids_per_piece: int) -> np.ndarray:
    """The first case of each piece of about ``ids_per_piece`` ranked and judged ids,
    and the number of cases last: cases are never split."""
    cases = len(ranked.counts)
    ids_before = offsets(ranked.counts) + offsets(judged.counts)
    cuts = np.searchsorted(ids_before, np.arange(ids_per_piece, ids_before[-1], ids_per_piece))
    return np.unique(np.concatenate([[0], cuts, [cases]]))


def id_codes(
    ranked: IdLists, judged: IdLists, ids_per_piece: int = IDS_PER_PIECE
) -> tuple[np.ndarray, np.ndarray, int]:
    """An integer code for each ranked and each judged id, and a bound above every code:
    within a case, equal ids have equal codes. The cases are encoded in pieces
    (``piece_bounds``), each with a dictionary of its own: only a case's ids are
    ever compared, never two cases'."""
    ranked_codes = np.empty(len(ranked.ids), dtype=np.int64)
    judged_codes = np.empty(len(judged.ids), dtype=np.int64)
    ranked_at, judged_at = offsets(ranked.counts), offsets(judged.counts)
    distinct = 1
    bounds = piece_bounds(ranked, judged, ids_per_piece)
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        r0, r1, j0, j1 = ranked_at[start], ranked_at[stop], judged_at[start], judged_at[stop]
        ids = pa.concat_arrays([ranked.ids.slice(r0, r1 - r0), judged.ids.slice(j0, j1 - j0)])
        encoded = ids.dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        ranked_codes[r0:r1], judged_codes[j0:j1] = codes[: r1 - r0], codes[r1 - r0 :]
        distinct = max(distinct, len(encoded.dictionary))
    return ranked_codes, judged_codes, distinct


def batch_from_lists(
    ranked: IdLists, judged: IdLists, ids_per_piece: int = IDS_PER_PIECE
) -> RetrievalBatch:
    """The batch of cases whose ranked ids (repeats included: metrics.md keeps each id's
    first rank) and judged ids (a repeat keeps its first grade) are ``ranked`` and
    ``judged``: ``BatchBuilder``'s result for the same cases, whatever ``ids_per_piece``."""
    cases = len(ranked.counts)
    ranked_codes, judged_codes, distinct = id_codes(ranked, judged, ids_per_piece)
    # One key per (case, id): case-major, so keys sort by case, then by id.
    ranked_keys = case_index(ranked.counts) * distinct + ranked_codes
    ordered, order, first = sorted_keys(ranked_keys)
    kept = np.zeros(len(ranked_keys), dtype=bool)
    kept[order[first]] = True
    judged_keys = case_index(judged.counts) * distinct + judged_codes
    once = first_occurrences(judged_keys)
    judged_keys = judged_keys[once]
    judged_grade = (
        np.ones(len(judged_keys), dtype=np.int64)
        if judged.grades is None
        else judged.grades[once].astype(np.int64)
    )
    # Each judged id's first ranked occurrence: the first of its key among the sorted
    # ranked keys (the sort is stable), where its grade goes.
    grade = np.full(len(ranked_keys), UNJUDGED, dtype=np.int64)
    if len(ranked_keys):
        at = np.minimum(np.searchsorted(ordered, judged_keys), len(ordered) - 1)
        found = ordered[at] == judged_keys
        grade[order[at[found]]] = judged_grade[found]
    case = ranked_keys[kept] // distinct
    judged_case = judged_keys // distinct
    return RetrievalBatch(
        cases=cases,
        case=case,
        rank=rank_within_case(case, cases),
        grade=grade[kept],
        relevant=np.bincount(judged_case, weights=judged_grade >= RELEVANT, minlength=cases),
        judged=np.bincount(judged_case, minlength=cases).astype(np.float64),
        judged_case=judged_case,
        judged_grade=judged_grade,
    )


def ranked_ids(retrieved: pa.Array, source_match: str) -> IdLists:
    """Each case's matched ids, as ranked (a null list: none), from the outputs'
    ``retrieved`` chunk lists: the chunk ids, or in ``"document"`` mode each chunk's
    ``metadata.document_id`` falling back to its id (``model.Chunk.document_id``)."""
    chunks = retrieved.flatten()
    counts = retrieved.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    ids = pc.struct_field(chunks, "id")
    if source_match == "document":
        ids = document_ids(ids, pc.struct_field(chunks, "metadata_json"))
    return IdLists(counts.astype(np.int64), ids)


def document_ids(chunk_ids: pa.Array, metadata_json: pa.Array) -> pa.Array:
    """Each chunk's document id: its metadata's ``document_id`` as ``str()`` gives it,
    else its chunk id. Only metadata whose text names the key is read."""
    named = pc.fill_null(pc.match_substring(metadata_json, '"document_id"'), False)
    where = np.flatnonzero(named.to_numpy(zero_copy_only=False))
    if not len(where):
        return chunk_ids
    texts = metadata_json.take(pa.array(where))
    try:
        found = _string_document_ids(texts)
    except pa.ArrowInvalid:
        # A document_id that is not a string (str() of a number, say): parsed one by one.
        found = pa.array([_document_id(text) for text in texts.to_pylist()], pa.string())
    ids = chunk_ids.to_numpy(zero_copy_only=False).astype(object)
    named_ids = found.to_numpy(zero_copy_only=False)
    given = np.flatnonzero(pc.is_valid(found).to_numpy(zero_copy_only=False))
    ids[where[given]] = named_ids[given]
    return pa.array(ids, pa.string())


_DOCUMENT_ID_ONLY = pj.ParseOptions(
    explicit_schema=pa.schema([("document_id", pa.string())]),
    unexpected_field_behavior="ignore",
)


def _string_document_ids(texts: pa.Array) -> pa.Array:
    """The top-level ``document_id`` of each JSON object (null where absent or null), by
    pyarrow's JSON reader; raises ``ArrowInvalid`` when one is not a string. The store
    writes metadata as one-line JSON (``store.schema``), so each text is one line."""
    lines = "\n".join(texts.to_pylist()).encode("utf-8")
    read = pj.read_json(pa.BufferReader(lines), parse_options=_DOCUMENT_ID_ONLY)
    if read.num_rows != len(texts):
        raise pa.ArrowInvalid("metadata texts did not read one row each")
    return read.column("document_id").combine_chunks()


def _document_id(text: str) -> str | None:
    metadata = json.loads(text)
    document = metadata.get("document_id") if metadata else None
    return None if document is None else str(document)


def judged_ids(expected: pa.Array, grades_json: pa.Array) -> IdLists:
    """Each case's judgments (``model.Case.judgments``): the ids its grades object
    names with their grades, or its list of expected ids at grade 1 each."""
    listed = IdLists.of(expected)
    graded = np.flatnonzero(grades_json.is_valid().to_numpy(zero_copy_only=False))
    if not len(graded):
        return listed
    ids: list[list[str] | None] = [None] * len(expected)
    grades: list[list[int] | None] = [None] * len(expected)
    for position, text in zip(graded, grades_json.take(pa.array(graded)).to_pylist(), strict=True):
        judgments = json.loads(text)
        ids[position], grades[position] = list(judgments), list(judgments.values())
    listed_grades = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(listed.counts)]), pa.int32()),
        pa.repeat(pa.scalar(1, pa.int64()), int(listed.counts.sum())),
    )
    is_graded = grades_json.is_valid()
    return IdLists.of(
        pc.if_else(is_graded, pa.array(ids, pa.list_(pa.string())), expected),
        pc.if_else(is_graded, pa.array(grades, pa.list_(pa.int64())), listed_grades),
    )
