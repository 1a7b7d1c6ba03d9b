"""ragproof against trec_eval on an imported TREC pair: the figures behind CONTRACT section 11.

    .venv/bin/python -m benchmarks.trec_eval_equality            # 10,300 generated queries
    .venv/bin/python -m benchmarks.trec_eval_equality --quick    # 500

Generates a qrels/run pair with score ties, queries without run lines and run
queries outside the qrels (tests/support/trec_equality.py), imports it with
the real importer, scores it with ragproof's evaluation path at trec_eval's
cut-offs 5 to 100, and prints, per metric, the largest absolute difference from
pytrec_eval (trec_eval's own code) over all queries. The test
tests/core/data/importers/test_trec_eval_equality.py asserts the same comparison.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import Benchmark, Table, count, parse_args, publish
from tests.support.trec_equality import compare, write_trec_pair

BENCHMARK = Benchmark(
    title="ragproof against trec_eval on an imported TREC pair",
    measures=(
        "A generated qrels/run pair with score ties, queries without run lines and run "
        "queries outside the qrels (10,300 queries), imported with the real importer and "
        "scored with ragproof's evaluation path at trec_eval's cut-offs 5 to 100: per "
        "metric, the largest absolute difference from pytrec_eval (trec_eval's own code) "
        "over all queries (CONTRACT section 11)."
    ),
    target="every difference <= 1e-12",
    order=180,
)

QUERIES, QUICK_QUERIES = 10_300, 500


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    queries = QUICK_QUERIES if args.quick else QUERIES
    with tempfile.TemporaryDirectory() as folder:
        pair = write_trec_pair(Path(folder) / "in", queries)
        tied = sum(1 for s in pair.run.values() if len(set(s.values())) < len(s))
        result = compare(pair, Path(folder))
    table = Table(
        title="Retrieval metrics on an imported TREC pair against trec_eval (pytrec_eval)",
        columns=["ragproof metric", "trec_eval measure", "max abs difference"],
        rows=[[name, _measure(name), f"{diff:.3g}"] for name, diff in result.max_abs_diff.items()],
        notes=[
            f"{count(queries)} generated queries; {count(result.queries)} with a relevant "
            f"document became cases; {count(tied)} run rankings have tied scores; "
            f"{count(result.without_run)} queries have no run lines (compared with 0, "
            f"as trec_eval -c counts them); {count(pair.run_line_count)} run lines.",
            "Binary qrels. With graded qrels only nDCG differs: trec_eval's gain is the rel "
            "value, ragproof's nDCG counts every rel > 0 as 1 (metrics.md).",
        ],
    )
    publish([table], args.emit)


def _measure(name: str) -> str:
    metric, _, k = name.partition("@")
    return {
        "retrieval.precision_at_k": f"P_{k}",
        "retrieval.recall_at_k": f"recall_{k}",
        "retrieval.mrr": "recip_rank",
        "retrieval.ndcg_at_k": f"ndcg_cut_{k}",
    }[metric]


if __name__ == "__main__":
    main()
