"""``ragproof import trec``: a TREC qrels/run pair as cases plus a retrieval-only recording.

Formats (whitespace-separated, as trec_eval reads them):

- qrels: ``qid iter docid rel`` (``iter`` is ignored; ``rel`` an integer);
- run: ``qid Q0 docid rank score tag`` (``rank`` is ignored, as trec_eval
  ignores it: the order comes from the scores);
- topics (optional): ``qid<TAB>text``, one per line.

Every qid of the qrels with a relevant document (rel > 0) becomes a qa case;
its question is the topic text, else the qid. Its ``expected_source_ids``
keep the qrels' grades (CONTRACT section 19): the object of every judged
docid with its rel, zeros included, or the list of docids when every rel is 1
(``writer.expected_sources``). Each case gets one recorded line whose ``retrieve`` lists
the run's documents in trec_eval's order: score descending, ties broken by
docid in descending byte order (trec_eval compares with ``strcmp``). A case
without run lines retrieves nothing (``"retrieve": []``), so it scores 0 the
way ``trec_eval -c`` counts it. The ``rank`` column is ignored, like trec_eval
does. A docid listed twice for one qid, in the run or in the qrels, is bad
input: trec_eval refuses such files too.

With these files, ragproof's retrieval metrics per query equal trec_eval's
``P_k``, ``recall_k``, ``recip_rank``, ``ndcg_cut_k`` (the rel values as
gains), ``map``, ``Rprec``, ``success_k`` and ``bpref``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.reading import text_lines
from ragproof_core.data.importers.writer import Imported, case_row, expected_sources


@dataclass(frozen=True, slots=True)
class RunEntry:
    docid: str
    score: float


def import_trec(qrels: str | Path, run: str | Path, topics: str | Path | None = None) -> Imported:
    """Cases and a retrieval-only recording from a qrels file, a run file and optional topics."""
    judged = read_qrels(qrels)
    ranked = read_run(run)
    texts = read_topics(topics) if topics is not None else {}

    cases, outputs = [], []
    without_run = 0
    relevant = set()
    for qid, grades in judged.items():
        expected = expected_sources(grades)
        if expected is None:
            continue
        relevant.add(qid)
        cases.append(case_row(qid, texts.get(qid, qid), expected_source_ids=expected))
        entries = ranked.get(qid)
        if entries is None:
            without_run += 1
        retrieve = [
            {"id": entry.docid, "text": "", "score": entry.score}
            for entry in trec_eval_order(entries or [])
        ]
        outputs.append({"case_id": qid, "retrieve": retrieve})

    notes = []
    if without_run:
        notes.append(f"queries without run lines (they retrieve nothing): {without_run}")
    ignored = len(ranked.keys() - relevant)
    if ignored:
        notes.append(f"run queries with no relevant document in the qrels (ignored): {ignored}")
    return Imported(cases=cases, outputs=outputs, notes=notes)


def trec_eval_order(entries: list[RunEntry]) -> list[RunEntry]:
    """Score descending; equal scores by docid in descending byte order (``strcmp``)."""
    return sorted(entries, key=lambda e: (e.score, e.docid.encode("utf-8")), reverse=True)


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """qid -> every docid judged for it with its rel, in file order."""
    path_text = str(path)
    lines: dict[str, dict[str, int]] = {}
    judged: dict[str, dict[str, int]] = {}
    for line, text in text_lines(path):
        fields = text.split()
        if len(fields) != 4:
            raise DatasetError(
                path_text, line, f"expected 4 fields 'qid iter docid rel', got {len(fields)}"
            )
        qid, _, docid, rel_text = fields
        try:
            rel = int(rel_text)
        except ValueError:
            raise DatasetError(
                path_text, line, f"relevance {rel_text!r} is not an integer"
            ) from None
        earlier = lines.setdefault(qid, {}).setdefault(docid, line)
        if earlier != line:
            raise DatasetError(
                path_text,
                line,
                f"docid {docid!r} is listed twice for qid {qid!r} (first on line {earlier})",
            )
        judged.setdefault(qid, {})[docid] = rel
    return judged


def read_run(path: str | Path) -> dict[str, list[RunEntry]]:
    """qid -> its run entries in file order (``trec_eval_order`` sorts them)."""
    path_text = str(path)
    entries: dict[str, list[RunEntry]] = {}
    first_line: dict[str, dict[str, int]] = {}
    for line, text in text_lines(path):
        fields = text.split()
        if len(fields) != 6:
            raise DatasetError(
                path_text,
                line,
                f"expected 6 fields 'qid Q0 docid rank score tag', got {len(fields)}",
            )
        qid, _, docid, _, score_text, _ = fields
        score = _score(score_text)
        if score is None:
            raise DatasetError(path_text, line, f"score {score_text!r} is not a finite number")
        earlier = first_line.setdefault(qid, {}).setdefault(docid, line)
        if earlier != line:
            raise DatasetError(
                path_text,
                line,
                f"docid {docid!r} is listed twice for qid {qid!r} (first on line {earlier}); "
                "trec_eval refuses duplicate documents",
            )
        entries.setdefault(qid, []).append(RunEntry(docid, score))
    return entries


def read_topics(path: str | Path) -> dict[str, str]:
    """qid -> topic text from ``qid<TAB>text`` lines."""
    path_text = str(path)
    texts: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line, text in text_lines(path):
        qid, tab, topic = text.partition("\t")
        qid, topic = qid.strip(), topic.strip()
        if not tab or not qid:
            raise DatasetError(path_text, line, "expected 'qid<TAB>text'")
        if not topic:
            raise DatasetError(path_text, line, f"topic {qid!r} has no text")
        earlier = first_line.setdefault(qid, line)
        if earlier != line:
            raise DatasetError(
                path_text, line, f"topic {qid!r} is listed twice (first on line {earlier})"
            )
        texts[qid] = topic
    return texts


def _score(text: str) -> Any:
    if "_" in text:  # float() accepts "1_000"; trec_eval's atof does not
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
