"""Malformed dataset lines: random valid datasets (with blank lines, which count as
lines) with one corrupted line inserted at a random position are rejected with
``PATH:LINE: reason`` naming exactly that line (for a repeated id, its second
occurrence); and ``ragproof run`` on such a file exits 1 without touching the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragproof_core.data.dataset import DatasetError, load_dataset
from tests.faults.conftest import FAULTS, materialize
from tests.support.cli import cli_env, ragproof
from tests.support.snapshot import dagster_home_as_seen

KINDS = ("qa", "unanswerable", "injection")
CORRUPTIONS = ("not_json", "missing_id", "missing_question", "repeated_id", "unknown_kind")

# Any text JSON can carry, including U+2028 and friends, which a JSON Lines reader
# must not treat as line breaks; surrogates cannot be encoded as UTF-8.
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
non_blank = text.filter(lambda s: s.strip() != "")

case_fields = st.fixed_dictionaries(
    {"question": non_blank},
    optional={
        "kind": st.sampled_from(KINDS),
        "expected_source_ids": st.lists(text, max_size=3),
        "expected_answer": text,
        "metadata": st.dictionaries(text, st.integers() | text, max_size=2),
    },
)


@st.composite
def corrupted_datasets(draw, corruption: str):
    """(lines, 1-based line number the loader must name, expected reason prefix)."""
    ids = draw(st.lists(non_blank, min_size=1, max_size=8, unique=True))
    cases = [{"id": case_id, **draw(case_fields)} for case_id in ids]
    position = draw(st.integers(0, len(cases)))
    template = draw(case_fields)
    fresh_id = max(ids, key=len) + "-new"  # longer than every id, so not one of them
    if corruption == "not_json":
        line = json.dumps({"id": fresh_id, **template}, ensure_ascii=False)
        bad = line[: draw(st.integers(1, len(line) - 1))]  # a strict prefix never parses
        reason = "not valid JSON"
    elif corruption == "missing_id":
        bad = json.dumps({**template, **draw(st.sampled_from([{}, {"id": None}]))})
        reason = "id: missing required field"
    elif corruption == "missing_question":
        row = {"id": fresh_id, **{k: v for k, v in template.items() if k != "question"}}
        bad = json.dumps({**row, **draw(st.sampled_from([{}, {"question": None}]))})
        reason = "question: missing required field"
    elif corruption == "repeated_id":
        repeated = draw(st.sampled_from(ids))
        bad = json.dumps({**template, "id": repeated}, ensure_ascii=False)
        reason = f"duplicate id {repeated!r}"
    else:
        kind = draw(non_blank.filter(lambda k: k not in KINDS) | st.integers() | st.booleans())
        bad = json.dumps({"id": fresh_id, **template, "kind": kind}, ensure_ascii=False)
        reason = "kind: expected 'qa', 'unanswerable', 'injection' or 'poisoning', got "

    lines = [json.dumps(case, ensure_ascii=False) for case in cases]
    lines.insert(position, bad)
    # Blank lines anywhere: skipped by the loader, yet counted like an editor counts them.
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", "   ", "\t"])))
    if corruption == "repeated_id":
        # The loader reports whichever occurrence comes second.
        occurrences = [
            number
            for number, line in enumerate(lines, start=1)
            if line.strip() and json.loads(line)["id"] == repeated
        ]
        bad_line = occurrences[1]
    else:
        bad_line = lines.index(bad) + 1
    return lines, bad_line, reason


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("datasets") / "cases.jsonl"


@pytest.mark.parametrize("corruption", CORRUPTIONS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_error_names_exactly_the_corrupted_line(scratch, corruption, data):
    lines, bad_line, reason = data.draw(corrupted_datasets(corruption))
    scratch.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(DatasetError) as caught:
        load_dataset(scratch)

    assert str(caught.value).startswith(f"{scratch}:{bad_line}: {reason}")
    assert (caught.value.path, caught.value.line) == (str(scratch), bad_line)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
def test_ragproof_run_rejects_the_file_and_leaves_the_store_byte_identical(
    instance, store_path, tmp_path
):
    # A store with a finished run in it, so "unchanged" covers real files.
    result = materialize(
        instance,
        "earlier",
        dataset=str(FAULTS / "judged.jsonl"),
        config_file=str(FAULTS / "judged.toml"),
    )
    assert result.success
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    before = _snapshot(store_path)
    assert "runs/earlier/run.parquet" in before and "ragproof.duckdb" in before

    dataset = FAULTS / "corrupted_dataset.jsonl"
    done = ragproof(
        "run",
        "--dataset",
        str(dataset),
        "--config",
        str(FAULTS / "judged.toml"),
        env=cli_env(RAGPROOF_STORE=str(store_path), DAGSTER_HOME=str(dagster_home)),
    )

    assert done.returncode == 1
    assert done.stderr == (
        f"ragproof: {dataset}:4: kind: expected 'qa', 'unanswerable', 'injection' or 'poisoning', "
        'got "trivia"\n'
    )
    assert done.stdout == ""
    assert _snapshot(store_path) == before
    # The run its dataset step refused is deleted again: no run, no partition listed.
    seen = dagster_home_as_seen(dagster_home)
    assert (seen["runs"], seen["partitions"]) == ([], [])
