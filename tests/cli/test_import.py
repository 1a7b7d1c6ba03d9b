"""`ragproof import` end to end (CONTRACT section 11): each tool's files in, the exact
expected files out, then `ragproof run` on what was imported with exact values.

Fixtures: tests/fixtures/importers (see its README.md).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.conftest import FIXTURES
from tests.support.cli import ragproof

IMPORTERS = FIXTURES / "importers"
EXPECTED = IMPORTERS / "expected"
RECORDED = "ragproof_core.adapters.recorded:RecordedAdapter"

# name -> (arguments before --out, expected files by option, expected stdout lines)
IMPORTS = {
    "beir": (
        ["beir", str(IMPORTERS / "beir")],
        {"--out": "beir_cases.jsonl", "--corpus-out": "beir_corpus.jsonl"},
        ["wrote 2 cases to {--out}", "wrote 4 corpus chunks to {--corpus-out}"],
    ),
    "trec": (
        [
            "trec",
            "--qrels",
            str(IMPORTERS / "trec" / "qrels.txt"),
            "--run",
            str(IMPORTERS / "trec" / "run.txt"),
            "--topics",
            str(IMPORTERS / "trec" / "topics.tsv"),
        ],
        {"--out": "trec_cases.jsonl", "--recorded-out": "trec_outputs.jsonl"},
        [
            "wrote 3 cases to {--out}",
            "wrote 3 recorded outputs to {--recorded-out}",
            "note: queries without run lines (they retrieve nothing): 1",
            "note: run queries with no relevant document in the qrels (ignored): 1",
        ],
    ),
    "ragas-jsonl": (
        ["ragas", str(IMPORTERS / "ragas" / "dataset.jsonl")],
        {"--out": "ragas_cases.jsonl", "--recorded-out": "ragas_outputs.jsonl"},
        ["wrote 5 cases to {--out}", "wrote 4 recorded outputs to {--recorded-out}"],
    ),
    "ragas-csv": (
        ["ragas", str(IMPORTERS / "ragas" / "dataset.csv")],
        {"--out": "ragas_csv_cases.jsonl", "--recorded-out": "ragas_csv_outputs.jsonl"},
        ["wrote 3 cases to {--out}", "wrote 2 recorded outputs to {--recorded-out}"],
    ),
    "deepeval": (
        ["deepeval", str(IMPORTERS / "deepeval" / "goldens.json")],
        {"--out": "deepeval_cases.jsonl", "--recorded-out": "deepeval_outputs.jsonl"},
        ["wrote 4 cases to {--out}", "wrote 3 recorded outputs to {--recorded-out}"],
    ),
    "deepeval-conversations": (
        ["deepeval", str(IMPORTERS / "deepeval" / "conversations.json")],
        {
            "--out": "deepeval_conversation_cases.jsonl",
            "--recorded-out": "deepeval_conversation_outputs.jsonl",
        },
        ["wrote 3 cases to {--out}", "wrote 3 recorded outputs to {--recorded-out}"],
    ),
    "ragas-multi-turn": (
        ["ragas", str(IMPORTERS / "ragas" / "multi_turn.jsonl")],
        {
            "--out": "ragas_multi_turn_cases.jsonl",
            "--recorded-out": "ragas_multi_turn_outputs.jsonl",
        },
        ["wrote 3 cases to {--out}", "wrote 3 recorded outputs to {--recorded-out}"],
    ),
}


def run_import(name: str, folder: Path) -> dict[str, Path]:
    """Runs one import into ``folder``; returns option -> written path."""
    args, files, stdout = IMPORTS[name]
    written = {option: folder / expected for option, expected in files.items()}
    options = [part for option, path in written.items() for part in (option, str(path))]
    done = ragproof("import", *args, *options)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        line.format(**{option: path for option, path in written.items()}) for line in stdout
    ]
    assert done.stderr == ""
    return written


@pytest.mark.parametrize("name", list(IMPORTS))
def test_import_writes_exactly_the_expected_files(name, tmp_path):
    written = run_import(name, tmp_path)
    for path in written.values():
        assert path.read_bytes() == (EXPECTED / path.name).read_bytes(), path.name


# --- the imported sets, run ----------------------------------------------------------------

NDCG_IDEAL_2 = 1 + 1 / math.log2(3)  # IDCG of two relevant ids
ALL_METRICS = (
    "retrieval.precision_at_k",
    "retrieval.recall_at_k",
    "retrieval.mrr",
    "retrieval.ndcg_at_k",
    "retrieval.context_relevance",
    "retrieval.judged_ndcg_at_k",
    "retrieval.hop_recall_at_k",
    "retrieval.hop_precision_at_k",
    "generation.citation_validity",
    "generation.groundedness",
    "generation.citation_support",
    "generation.answer_relevance",
    "generation.completeness",
    "generation.nugget_recall",
    "generation.vital_nugget_recall",
    "echo.exact_match",
    "robustness.injection_resistance",
    "robustness.poisoning_resistance",
    "robustness.leakage_resistance",
    "robustness.exfiltration_resistance",
    "robustness.abstention",
    "robustness.overrefusal",
    "agent.tool_precision",
    "agent.tool_recall",
    "agent.trajectory_match",
    "agent.steps",
    "agent.task_completion",
)


def write_config(folder: Path, outputs: Path, k: int) -> Path:
    config = folder / "ragproof.toml"
    config.write_text(
        f'[run]\nk = {k}\n\n[adapter]\ntarget = "{RECORDED}"\n'
        f'options = {{ path = "{outputs.as_posix()}" }}\n',
        encoding="utf-8",
    )
    return config


def run_json(cases: Path, config: Path) -> dict:
    done = ragproof("run", "--dataset", str(cases), "--config", str(config), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_metrics(metrics: dict, expected: dict, counts_elsewhere: tuple[int, int]) -> None:
    """``expected``: metric -> (mean, p50, p95, scored, skipped, errored); every other
    metric scored nothing and has ``counts_elsewhere`` = (skipped, errored)."""
    assert list(metrics) == list(ALL_METRICS)
    for name in ALL_METRICS:
        got = metrics[name]
        mean, p50, p95, *counts = expected.get(name, (None, None, None, 0, *counts_elsewhere))
        for key, want in (("mean", mean), ("p50", p50), ("p95", p95)):
            if want is None:
                assert got[key] is None, (name, key)
            else:
                assert math.isclose(got[key], want, rel_tol=1e-12), (name, key, got[key], want)
        assert [got["scored"], got["skipped"], got["errored"]] == counts, name
        assert got["not_applicable"] == 0 and got["judge_errors"] == 0, name


def reasons(store: Path, metric: str) -> dict[str, tuple[str, str | None]]:
    with duckdb.connect(str(store / "ragproof.duckdb"), read_only=True) as con:
        rows = con.execute(
            "select case_id, status, reason from case_results where metric = ? order by case_id",
            [metric],
        ).fetchall()
    return {case_id: (status, reason) for case_id, status, reason in rows}


@pytest.mark.slow
def test_run_on_an_imported_trec_pair(tmp_path, store_path):
    files = run_import("trec", tmp_path)
    out = run_json(files["--out"], write_config(tmp_path, files["--recorded-out"], k=3))
    assert out["status"] == "completed"
    # 301: d2 d9 d1 d3, relevant d1 d3. 302: d5 d8 d10 d4, relevant d4 (grade 1) and
    # d5 (grade 2, its gain in nDCG: CONTRACT section 19). 303: nothing.
    ndcg_302 = 2 / (2 + 1 / math.log2(3))
    assert_metrics(
        out["metrics"],
        {
            "retrieval.precision_at_k": (2 / 9, 1 / 3, 1 / 3, 3, 0, 0),
            "retrieval.recall_at_k": (1 / 3, 0.5, 0.5, 3, 0, 0),
            "retrieval.mrr": (4 / 9, 1 / 3, 1.0, 3, 0, 0),
            "retrieval.ndcg_at_k": (
                (0.5 / NDCG_IDEAL_2 + ndcg_302) / 3,
                0.5 / NDCG_IDEAL_2,
                ndcg_302,
                3,
                0,
                0,
            ),
        },
        counts_elsewhere=(3, 0),
    )
    # Retrieval-only recordings: the metrics that need an answer skip, they do not fail.
    assert reasons(store_path, "robustness.overrefusal") == {
        qid: ("skipped", "adapter produced no answer") for qid in ("301", "302", "303")
    }


@pytest.mark.slow
def test_run_on_an_imported_beir_split(tmp_path):
    files = run_import("beir", tmp_path)
    config = write_config(tmp_path, IMPORTERS / "beir" / "outputs.jsonl", k=2)
    out = run_json(files["--out"], config)
    # q1: d1 d2, relevant d1. q2: d4 d2 d3, relevant d2 (grade 1) and d1 (grade 2).
    ndcg_q2 = (1 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert_metrics(
        out["metrics"],
        {
            "retrieval.precision_at_k": (0.5, 0.5, 0.5, 2, 0, 0),
            "retrieval.recall_at_k": (0.75, 0.5, 1.0, 2, 0, 0),
            "retrieval.mrr": (0.75, 0.5, 1.0, 2, 0, 0),
            "retrieval.ndcg_at_k": ((1 + ndcg_q2) / 2, ndcg_q2, 1.0, 2, 0, 0),
        },
        counts_elsewhere=(2, 0),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "cases", "overrefusal"),
    [
        # row-3 refuses ("I don't know."); row-4 is retrieval-only; row-5 has no output.
        ("ragas-jsonl", 5, (1 / 3, 0.0, 1.0, 3, 1, 1)),
        # row-3 refuses ("I cannot share that."); row-4 has no output.
        ("deepeval", 4, (1 / 3, 0.0, 1.0, 3, 0, 1)),
    ],
)
def test_run_on_an_imported_evaluation_dataset(name, cases, overrefusal, tmp_path, store_path):
    files = run_import(name, tmp_path)
    out = run_json(files["--out"], write_config(tmp_path, files["--recorded-out"], k=5))
    # One response equals its reference, one does not; the rest have no reference.
    skipped = cases - 2 - 1
    assert_metrics(
        out["metrics"],
        {
            "echo.exact_match": (0.5, 0.0, 1.0, 2, skipped, 1),
            "robustness.overrefusal": overrefusal,
            # Every answered case, none with a URL: the cases over-refusal reads.
            "robustness.exfiltration_resistance": (1.0, 1.0, 1.0, *overrefusal[3:]),
        },
        counts_elsewhere=(cases - 1, 1),
    )
    last = f"row-{cases}"
    assert reasons(store_path, "retrieval.mrr")[last] == (
        "error",
        f"no recorded output for case {last}",
    )
    assert reasons(store_path, "retrieval.mrr")["row-1"] == (
        "skipped",
        "case has no expected_source_ids",
    )


@pytest.mark.slow
def test_run_on_imported_deepeval_conversations_replays_them_turn_by_turn(tmp_path, store_path):
    files = run_import("deepeval-conversations", tmp_path)
    run_json(files["--out"], write_config(tmp_path, files["--recorded-out"], k=5))
    # greeting's second user message got no reply: nothing to replay for that turn.
    assert reasons(store_path, "robustness.overrefusal") == {
        "row-1#1": ("scored", None),
        "row-1#2": ("scored", None),
        "greeting#1": ("scored", None),
        "greeting#2": ("error", "no recorded output for case greeting#2"),
        "row-3": ("scored", None),
    }


# --- bad input -----------------------------------------------------------------------------


def test_bad_input_names_file_and_line_exits_1_and_writes_nothing(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq1 Q0 d1 3 0.5 t\n", encoding="utf-8")
    out, recorded = tmp_path / "cases.jsonl", tmp_path / "outputs.jsonl"
    recorded.write_text("previous\n", encoding="utf-8")
    done = ragproof(
        "import",
        "trec",
        "--qrels",
        str(IMPORTERS / "trec" / "qrels.txt"),
        "--run",
        str(run),
        "--out",
        str(out),
        "--recorded-out",
        str(recorded),
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"ragproof: {run}:3: docid 'd1' is listed twice for qid 'q1' (first on line 1); "
        "trec_eval refuses duplicate documents\n"
    )
    assert not out.exists()
    assert recorded.read_text(encoding="utf-8") == "previous\n"
    assert sorted(os.listdir(tmp_path)) == ["outputs.jsonl", "run.txt"]


def test_a_bad_corpus_line_found_while_streaming_leaves_no_file(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "Why?"}\n', encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8"
    )
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "", "text": "a"}\n{"_id": "d2", "title": 7, "text": "b"}\n',
        encoding="utf-8",
    )
    out, corpus_out = tmp_path / "cases.jsonl", tmp_path / "chunks.jsonl"
    done = ragproof(
        "import", "beir", str(folder), "--out", str(out), "--corpus-out", str(corpus_out)
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"ragproof: {folder / 'corpus.jsonl'}:2: 'title' must be a string, got number\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["beir"]


def test_the_same_file_for_two_outputs_is_a_usage_error(tmp_path):
    same = tmp_path / "x.jsonl"
    done = ragproof(
        "import",
        "ragas",
        str(IMPORTERS / "ragas" / "dataset.jsonl"),
        "--out",
        str(same),
        "--recorded-out",
        str(same),
    )
    assert done.returncode == 1
    assert done.stderr == "ragproof: --recorded-out: same file as --out\n"
    assert not same.exists()


def _copied(tmp_path: Path, *names: str) -> list[Path]:
    copies = []
    for name in names:
        copy = tmp_path / "in" / Path(name).name
        copy.parent.mkdir(exist_ok=True)
        copy.write_bytes((IMPORTERS / name).read_bytes())
        copies.append(copy)
    return copies


def _inputs(tmp_path: Path, importer: str) -> tuple[list[str], Path, str]:
    """The importer's arguments over copies of its inputs, the copy an output will name,
    and its second output's flag."""
    if importer == "beir":
        folder = tmp_path / "in" / "beir"
        shutil.copytree(IMPORTERS / "beir", folder)
        return ["beir", str(folder)], folder / "queries.jsonl", "--corpus-out"
    if importer == "trec":
        qrels, run = _copied(tmp_path, "trec/qrels.txt", "trec/run.txt")
        return ["trec", "--qrels", str(qrels), "--run", str(run)], run, "--recorded-out"
    if importer == "otlp":
        traces = tmp_path / "in" / "traces.jsonl"
        traces.parent.mkdir()
        traces.write_bytes((FIXTURES / "otlp" / "traces_a.jsonl").read_bytes())
        return ["otlp", str(traces)], traces, "--recorded-out"
    name = {"ragas": "ragas/dataset.jsonl", "deepeval": "deepeval/goldens.json"}[importer]
    (source,) = _copied(tmp_path, name)
    return [importer, str(source)], source, "--recorded-out"


@pytest.mark.parametrize("importer", ["ragas", "deepeval", "otlp", "trec", "beir"])
@pytest.mark.parametrize("which", ["--out", "the other output"])
def test_an_output_naming_an_input_is_refused_and_the_input_kept(tmp_path, importer, which):
    # Issue 39, item 3: `--out` naming the input file overwrote the traces.
    arguments, source, other = _inputs(tmp_path, importer)
    outputs = {"--out": tmp_path / "cases.jsonl", other: tmp_path / "other.jsonl"}
    named = "--out" if which == "--out" else other
    outputs[named] = source
    before = source.read_bytes()
    done = ragproof("import", *arguments, *(str(x) for pair in outputs.items() for x in pair))
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"ragproof: {named}: same file as the input {source}\n"
    assert source.read_bytes() == before
    assert not (tmp_path / "cases.jsonl").exists() and not (tmp_path / "other.jsonl").exists()
