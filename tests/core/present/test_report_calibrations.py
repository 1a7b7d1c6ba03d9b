"""The report shows a run's human-label calibration (PPI) beside the raw mean, and a
jury's agreement, from what the store holds (CONTRACT sections 12 and 15)."""

from __future__ import annotations

from dataclasses import replace

from ragproof_core.calibration.labels import Label, calibrate_run
from ragproof_core.metrics.aggregate import summarize
from ragproof_core.model import Case, CaseOutput, scored
from ragproof_core.present.html import render_html
from ragproof_core.present.report_data import gather_report
from ragproof_core.store.run_store import RunStore
from tests.core.store import sample

GROUNDEDNESS = "generation.groundedness"
# Judge scores f for six cases; humans labelled the first three (y).
JUDGE = {"c1": 1.0, "c2": 1.0, "c3": 0.5, "c4": 1.0, "c5": 0.5, "c6": 0.0}
HUMAN = {"c1": 0.5, "c2": 1.0, "c3": 0.0}


def _judged_run(store: RunStore, run_id: str) -> None:
    cases = [Case(cid, f"question {cid}") for cid in JUDGE]
    # Judge-scored results carry the judge's reply; only those are calibrated.
    results = [scored(cid, GROUNDEDNESS, value, '{"claims": []}') for cid, value in JUDGE.items()]
    store.write_manifest(run_id, {"run_id": run_id})
    store.write_dataset(run_id, cases)
    store.write_outputs(run_id, [CaseOutput(cid) for cid in JUDGE])
    store.write_case_results(run_id, results)
    store.write_summaries(run_id, summarize(results, (GROUNDEDNESS,)))
    agreement = {
        GROUNDEDNESS: {"alpha": 0.5, "level": "interval", "cases": 6, "models": ["a", "b"]}
    }
    store.write_run(
        replace(sample.record(run_id, cases=6), judge_model="a,b", judge_agreement=agreement)
    )


def test_the_report_carries_the_latest_calibration_and_the_jury_agreement(tmp_path):
    store = RunStore(tmp_path / "store")
    _judged_run(store, "r1")
    labels = [Label(cid, GROUNDEDNESS, y, {"case_id": cid}) for cid, y in HUMAN.items()]
    calibration = calibrate_run("r1", store.case_results_frame("r1"), labels)
    store.write_calibration(calibration, labels_file="labels.jsonl")

    data = gather_report(store, "r1")

    corrected = data["calibrations"][GROUNDEDNESS]
    # mean_U(f) = (1 + 0.5 + 0) / 3 = 0.5; mean_L(y - f) = (-0.5 + 0 - 0.5) / 3 = -1/3.
    assert corrected["ppi_mean"] == 0.5 - 1 / 3
    assert (corrected["n_judged"], corrected["n_labelled"]) == (6, 3)
    assert corrected["human_mean"] == 0.5
    assert data["run"]["judge_agreement"][GROUNDEDNESS]["alpha"] == 0.5
    page = render_html(data)
    assert "Human-corrected (PPI)" in page  # the column the page's script fills


def test_a_run_without_labels_has_no_calibration_column_values(tmp_path):
    store = RunStore(tmp_path / "store")
    _judged_run(store, "r2")
    data = gather_report(store, "r2")
    assert data["calibrations"] == {}


def test_context_relevance_verdicts_and_a_jurys_reply_are_read_for_the_chunks():
    from ragproof_core.present.report_data import parse_judge

    reply = '{"verdicts": [{"chunk_id": "d1", "relevance": "partial"}]}'
    assert parse_judge(reply) == {"verdicts": [{"chunk_id": "d1", "relevance": "partial"}]}
    jury = (
        '{"jury": {"m1": {"verdicts": [{"chunk_id": "d2", "supported": true}]}, "m2": {}},'
        ' "scores": {"m1": 1.0}}'
    )
    assert parse_judge(jury) == {"verdicts": [{"chunk_id": "d2", "supported": True}]}
