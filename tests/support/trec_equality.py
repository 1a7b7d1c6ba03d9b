"""ragproof against trec_eval on a generated TREC qrels/run pair (CONTRACT section 11).

``write_trec_pair`` writes seeded random qrels and run files shaped to hit
trec_eval's corners: many score ties (so the docid tie-break decides the
order), docids whose byte order differs from their numeric order (``d10`` <
``d9``; upper case before lower case; non-ASCII after both), run lines in
shuffled order with a rank column that disagrees with the scores (trec_eval
ignores it), queries with no run lines, run queries absent from the qrels and
queries whose judged documents are all non-relevant (no case).

``write_trec_pair(..., graded=True)`` judges with grades 0 to 3 instead of 0
and 1, so the imported cases carry objects of grades (CONTRACT section 19).

``compare`` imports the files with the real importer, evaluates them with
ragproof's own evaluation path (``evaluate`` with ``RecordedAdapter``) at
each cut-off and returns the largest absolute difference per metric against
pytrec_eval (trec_eval's code), per query. A query without run lines is
compared with 0, the value ``trec_eval -c`` counts for it.
``retrieval.judged_at_k`` is ir_measures' ``Judged@k``, "P@k with a rel lower
than any judgment": trec_eval's ``P_k`` at relevance level 0.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from pathlib import Path

from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.config.settings import RunSettings
from ragproof_core.data.dataset import load_dataset
from ragproof_core.data.importers.trec import import_trec
from ragproof_core.data.importers.writer import write_files
from ragproof_core.metrics.retrieval import retrieval_results
from ragproof_core.run.evaluate import evaluate

CUTOFFS = (5, 10, 15, 20, 30, 100)  # trec_eval's default cut-offs up to 100
# ragproof metric -> trec_eval measure (with the cut-off appended where it has one).
MEASURES = {
    "retrieval.precision_at_k": "P_{k}",
    "retrieval.recall_at_k": "recall_{k}",
    "retrieval.mrr": "recip_rank",
    "retrieval.ndcg_at_k": "ndcg_cut_{k}",
    "retrieval.map": "map",
    "retrieval.r_precision": "Rprec",
    "retrieval.hit_rate_at_k": "success_{k}",
    "retrieval.bpref": "bpref",
    "retrieval.judged_at_k": "judged_{k}",
}
# The metrics whose value does not depend on the cut-off.
UNCUT = {"retrieval.mrr", "retrieval.map", "retrieval.r_precision", "retrieval.bpref"}

# The four trec_eval measures (the judged retrieval metrics have no trec_eval twin).
TREC_METRICS = (
    "retrieval.precision_at_k",
    "retrieval.recall_at_k",
    "retrieval.mrr",
    "retrieval.ndcg_at_k",
)
# Every metric of CONTRACT section 19 with a trec_eval (or ir_measures) twin.
DEPTH_METRICS = (
    *TREC_METRICS,
    "retrieval.map",
    "retrieval.r_precision",
    "retrieval.hit_rate_at_k",
    "retrieval.bpref",
    "retrieval.judged_at_k",
)


@dataclass
class TrecPair:
    qrels_path: Path
    run_path: Path
    qrels: dict[str, dict[str, int]]
    run: dict[str, dict[str, float]]
    run_line_count: int
    # The first run line of the first query with at least two run lines: (line, qid, docid).
    first_run_line: tuple[int, str, str] = field(default=(0, "", ""))


def _docid(rng: random.Random) -> str:
    n = rng.randrange(1000)
    return rng.choice((f"d{n}", f"d{n}", f"D{n}", f"doc-{n:03d}", f"é{n}", f"d{n % 30}"))


def write_trec_pair(folder: Path, queries: int, seed: int = 11, graded: bool = False) -> TrecPair:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    qrels_lines: list[str] = []
    run_lines: list[str] = []
    first_run_line = (0, "", "")
    for index in range(queries):
        qid = f"q{index + 1}"
        judged: dict[str, int] = {}
        for _ in range(rng.randint(1, 12)):
            if graded:
                judged[_docid(rng)] = rng.choice((0, 0, 0, 1, 1, 2, 3))
            else:
                judged[_docid(rng)] = 1 if rng.random() < 0.4 else 0
        if rng.random() > 0.05 and not any(judged.values()):
            judged[next(iter(judged))] = 1  # most queries have a relevant document
        qrels[qid] = judged
        qrels_lines += [f"{qid} 0 {doc} {rel}" for doc, rel in judged.items()]
        if rng.random() < 0.08:
            continue  # no run lines: trec_eval -c counts the query as 0
        docs = [doc for doc in judged if rng.random() < 0.6]
        docs += [_docid(rng) for _ in range(rng.randint(0, 40))]
        docs = list(dict.fromkeys(docs)) or [_docid(rng)]
        # Scores on a coarse grid: many ties, some negative.
        scores = {doc: rng.randint(-8, 40) / 4 for doc in docs}
        run[qid] = scores
        lines = [
            f"{qid} Q0 {doc} {rank} {score!r} tag"
            for rank, (doc, score) in enumerate(scores.items(), 1)
        ]
        rng.shuffle(lines)  # file order and the rank column mean nothing to trec_eval
        if len(lines) >= 2 and not first_run_line[0]:
            first_run_line = (len(run_lines) + 1, qid, lines[0].split()[2])
        run_lines += lines
    for index in range(queries // 50):  # run queries absent from the qrels: ignored
        run_lines.append(f"x{index} Q0 d1 1 1.0 tag")
    folder.mkdir(parents=True, exist_ok=True)
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    qrels_path.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    run_path.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    return TrecPair(qrels_path, run_path, qrels, run, len(run_lines), first_run_line)


def trec_eval_scores(pair: TrecPair) -> dict[str, dict[str, float]]:
    """Per query, trec_eval's measures (pytrec_eval runs trec_eval's own C code), with
    ``judged_k``: ``P_k`` with every judged document relevant (each grade raised by 1,
    as pytrec_eval refuses relevance level 0)."""
    import pytrec_eval

    cuts = ",".join(str(k) for k in CUTOFFS)
    measures = {"P", "recall", "recip_rank", "ndcg_cut", "map", "Rprec", "bpref", f"success.{cuts}"}
    scores = pytrec_eval.RelevanceEvaluator(pair.qrels, measures).evaluate(pair.run)
    raised = {
        qid: {doc: grade + 1 for doc, grade in qrel.items()} for qid, qrel in pair.qrels.items()
    }
    judged = pytrec_eval.RelevanceEvaluator(raised, {"P"})
    for qid, values in judged.evaluate(pair.run).items():
        scores[qid].update({f"judged_{k}": values[f"P_{k}"] for k in CUTOFFS})
    return scores


def ragproof_scores(
    pair: TrecPair, work: Path, metrics: tuple[str, ...] = TREC_METRICS
) -> dict[int, dict[str, dict[str, float]]]:
    """cut-off -> case -> ragproof's ``metrics``, through the imported files.

    The first two cut-offs go through the whole evaluation path (``evaluate``
    replaying the recording); the others re-score the replayed outputs with
    ``retrieval_results``, the function ``evaluate`` calls, which keeps the
    test fast.
    """
    cases_path, outputs_path = work / "cases.jsonl", work / "outputs.jsonl"
    imported = import_trec(pair.qrels_path, pair.run_path)
    write_files([(cases_path, imported.cases), (outputs_path, imported.outputs)])
    cases = load_dataset(cases_path)
    adapter = RecordedAdapter(str(outputs_path))
    by_cutoff: dict[int, dict[str, dict[str, float]]] = {}
    outputs = None
    for k in CUTOFFS:
        settings = RunSettings(k=k, metrics=metrics)
        if k in CUTOFFS[:2]:
            evaluation = asyncio.run(evaluate(cases, adapter, settings))
            results, outputs = evaluation.results, evaluation.outputs
        else:
            results = [
                result
                for case, output in zip(cases, outputs, strict=True)
                for result in retrieval_results(case, output, settings, metrics)
            ]
        scores = by_cutoff[k] = {}
        for result in results:
            if result.value is None:
                raise AssertionError(
                    f"{result.case_id} {result.metric}: {result.status} {result.reason}"
                )
            scores.setdefault(result.case_id, {})[result.metric] = result.value
    return by_cutoff


@dataclass
class Comparison:
    queries: int  # cases compared
    without_run: int  # of which had no run lines (compared with 0)
    max_abs_diff: dict[str, float]  # "metric@k" -> largest |ragproof - trec_eval|


def compare(pair: TrecPair, work: Path, metrics: tuple[str, ...] = TREC_METRICS) -> Comparison:
    theirs = trec_eval_scores(pair)
    relevant_qids = {qid for qid, judged in pair.qrels.items() if any(judged.values())}
    worst: dict[str, float] = {}
    ours_qids: set[str] = set()
    without_run = 0
    for k, ours in ragproof_scores(pair, work, metrics).items():
        ours_qids = set(ours)
        for qid, values in ours.items():
            measured = theirs.get(qid)
            if k == CUTOFFS[0] and measured is None:
                without_run += 1
            for metric in metrics:
                template = MEASURES[metric]
                expected = 0.0 if measured is None else measured[template.format(k=k)]
                name = metric if metric in UNCUT else f"{metric}@{k}"
                diff = abs(values[metric] - expected)
                worst[name] = max(worst.get(name, 0.0), diff)
    if ours_qids != relevant_qids:
        raise AssertionError("the imported cases are not the qrels queries with a relevant doc")
    return Comparison(len(ours_qids), without_run, worst)
