"""`ragproof import otlp` on the command line: files written, notes printed, and bad
input as one `ragproof: PATH:LINE: reason` line with nothing written."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES
from tests.support.cli import ragproof
from tests.support.otlp import document, root_span, trace_id

OTLP = FIXTURES / "otlp"


def test_import_otlp_writes_cases_and_recordings_or_nothing(tmp_path):
    cases, outputs = tmp_path / "cases.jsonl", tmp_path / "outputs.jsonl"
    done = ragproof(
        "import",
        "otlp",
        str(OTLP / "traces_a.jsonl"),
        str(OTLP / "traces_b.json"),
        "--out",
        str(cases),
        "--recorded-out",
        str(outputs),
        "--sample",
        "1",
        "--seed",
        "4",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote 5 cases to {cases}",
        f"wrote 5 recorded outputs to {outputs}",
    ]
    assert [json.loads(line)["id"] for line in cases.read_text().splitlines()][0] == "session-a"

    bad_cases, bad_outputs = tmp_path / "bad_cases.jsonl", tmp_path / "bad_outputs.jsonl"
    bad = ragproof(
        "import",
        "otlp",
        str(OTLP / "traces_a.jsonl"),
        str(OTLP / "malformed.jsonl"),
        "--out",
        str(bad_cases),
        "--recorded-out",
        str(bad_outputs),
    )
    assert bad.returncode == 1
    assert bad.stderr == (
        f"ragproof: {OTLP / 'malformed.jsonl'}:2: span 8a00000000000002: attribute "
        "'retrieval.documents.0.document.content': value is not an OTLP AnyValue object\n"
    )
    assert not bad_cases.exists() and not bad_outputs.exists()


@pytest.mark.parametrize(
    ("hostile", "reason"),
    [
        ('{"intValue": ' + "9" * 5000 + "}", "an integer of more than 4300 digits"),
        ('{"stringValue": "\\ud800"}', "attribute 'x': a lone surrogate is not valid text"),
        ("[" * 20_000 + "]" * 20_000, "nested deeper than 64 levels"),
        ('{"doubleValue": "NaN"}', "attribute 'x': doubleValue must be a finite number"),
    ],
    ids=["5000-digits", "lone-surrogate", "20000-deep", "nan"],
)
def test_a_hostile_trace_is_one_line_exit_1_and_nothing_written(tmp_path, hostile, reason):
    # Issue 39, item 3: each was exit 3 (an internal error) or a file of bare NaN.
    good = json.dumps(document([root_span(trace_id(1), "q?", "a")]))
    bad = json.dumps(document([root_span(trace_id(2), "q2?", "a2")])).replace(
        '"attributes": [', '"attributes": [{"key": "x", "value": ' + hostile + "}, "
    )
    traces = tmp_path / "traces.jsonl"
    traces.write_text(f"{good}\n{bad}\n", encoding="utf-8")
    cases, outputs = tmp_path / "cases.jsonl", tmp_path / "outputs.jsonl"
    done = ragproof(
        "import", "otlp", str(traces), "--out", str(cases), "--recorded-out", str(outputs)
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"ragproof: {traces}:2: span {trace_id(2)[16:]}: {reason}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.jsonl"]
