"""`ragproof import otlp` on the command line: files written, notes printed, and bad
input as one `ragproof: PATH:LINE: reason` line with nothing written."""

from __future__ import annotations

import json

from tests.conftest import FIXTURES
from tests.support.cli import ragproof

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
