"""What every importer shares: the imported result, row ids and all-or-nothing writing.

Output rows are ragproof's own formats: dataset cases (CONTRACT section 1),
recorded-output lines for ``RecordedAdapter`` (section 2) and corpus chunks
(``{"id", "text", "metadata"}``). Each file is written to a temporary name
beside its destination and renamed only once every file of the import has been
written, so an import that fails half-way (a bad line found while streaming a
corpus) leaves the previous files as they were.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import DatasetError
from ragproof_core.masking import Masker, environment_secrets


@dataclass
class Imported:
    """An importer's result, validated and ready to write.

    ``outputs`` is None when the source holds no pipeline outputs to record
    (BEIR); ``notes`` are facts worth a line in the command's summary.
    """

    cases: list[dict[str, Any]]
    outputs: list[dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)


def row_id(number: int) -> str:
    """The case id of an id-less source row: ``row-N``, N 1-based (header excluded)."""
    return f"row-{number}"


class IdRegistry:
    """Ids seen so far, so a repeated id is reported at the line that repeats it.

    ``key``: the id's name in the source (``_id`` in a BEIR file), as the error says it.
    """

    def __init__(self, path: str | Path, key: str = "id") -> None:
        self.path = str(path)
        self.key = key
        self._first_line: dict[str, int] = {}

    def __contains__(self, case_id: object) -> bool:
        return case_id in self._first_line

    def claim(self, case_id: str, line: int) -> None:
        earlier = self._first_line.setdefault(case_id, line)
        if earlier != line:
            raise DatasetError(
                self.path, line, f"duplicate {self.key} {case_id!r} (first used on line {earlier})"
            )


def collect(
    path: str | Path,
    rows: Iterable[tuple[int, Any]],
    convert: Callable[[Any, int], tuple[dict[str, Any], dict[str, Any] | None]],
    nothing: str,
) -> Imported:
    """Cases and recorded outputs from ``(line, row)`` pairs, one ``convert`` call a row.

    ``convert(row, number)`` (number: the 1-based row) returns the case and its
    recorded-output line (None: nothing to record), or raises ``ValueError``,
    reported at the row's line. A repeated case id is reported where it repeats;
    no rows at all is ``nothing``, reported at line 1.
    """
    path_text = str(path)
    ids = IdRegistry(path_text)
    cases, outputs = [], []
    for number, (line, row) in enumerate(rows, start=1):
        try:
            case, output = convert(row, number)
        except ValueError as exc:
            raise DatasetError(path_text, line, str(exc)) from None
        ids.claim(case["id"], line)
        cases.append(case)
        if output is not None:
            outputs.append(output)
    if not cases:
        raise DatasetError(path_text, 1, nothing)
    return Imported(cases=cases, outputs=outputs)


def expected_sources(judged: Mapping[str, int]) -> list[str] | dict[str, int] | None:
    """A query's qrels as ``expected_source_ids`` (CONTRACT section 19), ids in qrels order.

    The grades are kept, zeros included, as an object of grades; when every
    judged grade is 1 the list of ids says the same and is written instead (so
    binary qrels import exactly as before). A negative grade is left out: it
    marks an unjudged document, as trec_eval reads it. None when no grade is
    >= 1: the query has no relevant document and makes no case.
    """
    grades = {docid: grade for docid, grade in judged.items() if grade >= 0}
    if not any(grade >= 1 for grade in grades.values()):
        return None
    if all(grade == 1 for grade in grades.values()):
        return list(grades)
    return grades


def case_row(
    case_id: str,
    question: str,
    expected_source_ids: Sequence[str] | Mapping[str, int] | None = None,
    expected_answer: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One dataset line; absent optional fields are left out rather than written as null."""
    row: dict[str, Any] = {"id": case_id, "question": question}
    if isinstance(expected_source_ids, Mapping):
        row["expected_source_ids"] = dict(expected_source_ids)
    elif expected_source_ids:
        row["expected_source_ids"] = list(expected_source_ids)
    if expected_answer is not None:
        row["expected_answer"] = expected_answer
    if metadata:
        row["metadata"] = dict(metadata)
    return row


def context_chunks(case_id: str, contexts: Sequence[str]) -> list[dict[str, str]]:
    """Retrieved context strings as chunks with ids ``CASE_ID:ctx-I`` (I from 1)."""
    return [{"id": f"{case_id}:ctx-{i}", "text": text} for i, text in enumerate(contexts, 1)]


def recorded_row(
    case_id: str, contexts: Sequence[str] | None, response: str | None
) -> dict[str, Any] | None:
    """A recorded-output line from a row's contexts and response; None when it has neither.

    Contexts without a response make a retrieval-only line (``retrieve``, no
    ``answer``): answer metrics skip it. A row with neither has nothing to
    replay, so it gets no line and a run counts it as a case failure.
    """
    if contexts is None and response is None:
        return None
    row: dict[str, Any] = {"case_id": case_id}
    if contexts is not None:
        row["retrieve"] = context_chunks(case_id, contexts)
    if response is not None:
        row["answer"] = {"text": response}
    return row


def write_files(
    files: Sequence[tuple[Path, Iterable[Mapping[str, Any]]]], masker: Masker | None = None
) -> list[int]:
    """Write each ``(path, rows)`` as JSON Lines, all or none; returns the row counts.

    ``rows`` may be a generator that raises ``DatasetError`` part-way (a
    streamed corpus): then no destination is touched and the temporary files
    are removed. Every string of every row goes through ``masker`` (default: the
    values of the environment's secret-named variables, CONTRACT section 28): an
    imported trace or test case holding one is written with ``***``, and the masker
    counts the strings.
    """
    masker = Masker(environment_secrets()) if masker is None else masker
    for path, _ in files:
        if Path(path).is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
    written: list[tuple[Path, Path]] = []
    counts: list[int] = []
    try:
        for path, rows in files:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            written.append((temp, path))
            counts.append(_write_jsonl(temp, (masker.value(row) for row in rows), path))
    except BaseException:
        for temp, _ in written:
            temp.unlink(missing_ok=True)
        raise
    for temp, path in written:
        os.replace(temp, path)
    return counts


def jsonl_line(row: Mapping[str, Any]) -> str:
    """One JSON Lines line of ``row``: strict JSON (no NaN nor infinity), key order the
    row's own (id first), text readable UTF-8. Raises ``ValueError`` (a NaN) or
    ``UnicodeEncodeError`` (half a surrogate pair) for what no JSON reader reads back."""
    line = json.dumps(row, ensure_ascii=False, allow_nan=False)
    line.encode("utf-8")
    return line + "\n"


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]], destination: Path) -> int:
    count = 0
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            try:
                handle.write(jsonl_line(row))
            except ValueError as exc:  # UnicodeEncodeError included
                # The importers refuse such values where they read them, naming the line;
                # this is the last guard, so no file ragproof writes is less than JSON.
                raise DatasetError(
                    str(destination),
                    count + 1,
                    f"row {count + 1} cannot be written as JSON ({_unwritable(exc)})",
                ) from None
            count += 1
    return count


def _unwritable(exc: ValueError) -> str:
    if isinstance(exc, UnicodeEncodeError):
        return "half of a surrogate pair"
    return "a NaN or an infinity"
