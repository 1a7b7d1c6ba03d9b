import json
import shutil
from pathlib import Path

import pytest

from ragproof_core.calibration.fixture_files import (
    DEFAULT_DIRECTORY,
    FixtureError,
    check_fixtures,
    load_fixtures,
)
from ragproof_core.calibration.fixtures_check import main


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    """A private copy of the shipped fixtures to break."""
    return Path(shutil.copytree(DEFAULT_DIRECTORY, tmp_path / "fixtures"))


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def set_line(path: Path, number: int, text: str) -> None:
    content = lines(path)
    content[number - 1] = text
    path.write_text("\n".join(content) + "\n", encoding="utf-8")


def edit(path: Path, number: int, **changes) -> None:
    obj = json.loads(lines(path)[number - 1])
    for key, value in changes.items():
        if value is None:
            obj.pop(key)
        else:
            obj[key] = value
    set_line(path, number, json.dumps(obj))


def test_shipped_fixtures_are_sound():
    assert check_fixtures() == []
    fixtures = load_fixtures()
    per_prompt = {p: sum(f.prompt == p for f in fixtures) for p in {f.prompt for f in fixtures}}
    assert per_prompt == {
        "groundedness": 12,
        "citation_support": 12,
        "answer_relevance": 12,
        "completeness": 12,
        "refusal": 12,
        "context_relevance": 12,
        "knowledge_retention": 12,
        "groundedness_history": 12,
        "critique_qa": 12,
        "task_completion": 12,
        "claim_check": 14,
        "nugget_support": 14,
        "generate_nuggets": 12,
    }


def test_shipped_fixtures_cover_every_band():
    fixtures = load_fixtures()
    bands = {p: {f.human_score for f in fixtures if f.prompt == p} for p in
             ("groundedness", "citation_support", "answer_relevance", "completeness",
              "knowledge_retention", "groundedness_history", "task_completion", "claim_check",
              "nugget_support")}  # fmt: skip
    assert all(found == {0.0, 0.5, 1.0} for found in bands.values()), bands
    assert {f.human_score for f in fixtures if f.prompt == "refusal"} == {0.0, 1.0}


def test_main_prints_counts_and_exits_zero(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "groundedness: 12 fixtures (0: 4, 0.5: 4, 1: 4)",
        "citation_support: 12 fixtures (0: 4, 0.5: 4, 1: 4)",
        "answer_relevance: 12 fixtures (0: 4, 0.5: 4, 1: 4)",
        "completeness: 12 fixtures (0: 4, 0.5: 4, 1: 4)",
        "refusal: 12 fixtures (0: 5, 1: 7)",
        "context_relevance: 12 fixtures (0: 4, 0.5: 5, 1: 3)",
        "knowledge_retention: 12 fixtures (0: 5, 0.5: 3, 1: 4)",
        "task_completion: 12 fixtures (0: 5, 0.5: 3, 1: 4)",
        "claim_check: 14 fixtures (0: 5, 0.5: 4, 1: 5)",
        "nugget_support: 14 fixtures (0: 4, 0.5: 5, 1: 5)",
        "groundedness_history: 12 fixtures (0: 2, 0.5: 4, 1: 6)",
        "critique_qa: 12 fixtures (0: 9, 1: 3)",
        "generate_nuggets: 12 fixtures (1: 12)",
    ]


def test_every_problem_is_reported_with_file_and_line(fixtures, capsys):
    g = fixtures / "groundedness.jsonl"
    set_line(g, 2, '{"id": "g02", "prompt": ')  # truncated JSON
    edit(g, 3, human_score=0.3)
    edit(g, 4, reason="  ")
    edit(g, 5, reason=None)
    edit(g, 6, id=json.loads(lines(g)[0])["id"])  # duplicate of line 1
    edit(g, 7, human_score=True)
    r = fixtures / "refusal.jsonl"
    edit(r, 1, human_score=0.5)
    edit(r, 2, prompt="tone")
    edit(fixtures / "completeness.jsonl", 1, case={"question": "What?"})
    edit(fixtures / "citation_support.jsonl", 1, output={"answer": {"text": "x", "citations": []}})
    (fixtures / "style.jsonl").write_text("{}\n", encoding="utf-8")

    first_id = json.loads(lines(g)[0])["id"]
    expected = [
        f"{fixtures / 'citation_support.jsonl'}:1: a citation_support fixture needs "
        "output.answer.retrieved_chunks",
        f"{fixtures / 'citation_support.jsonl'}:1: a citation_support fixture needs "
        "output.answer.citations",
        f"{fixtures / 'completeness.jsonl'}:1: a completeness fixture needs case.expected_answer",
        f"{g}:2: not valid JSON (Expecting value at column 25)",
        f"{g}:3: human_score must be 0, 0.5 or 1, got 0.3",
        f"{g}:4: reason must be a non-empty string",
        f"{g}:5: missing key(s): reason",
        f"{g}:6: duplicate id {first_id!r} (first at {g}:1)",
        f"{g}:7: human_score must be 0, 0.5 or 1, got True",
        f"{r}:1: refusal human_score must be 0 or 1 (refused), got 0.5",
        f"{r}:2: unknown prompt 'tone'; known: groundedness, citation_support, "
        "answer_relevance, completeness, refusal, context_relevance, knowledge_retention, "
        "task_completion, claim_check, nugget_support, groundedness_history, critique_qa, "
        "generate_nuggets",
        f"{fixtures / 'style.jsonl'}: unknown prompt 'style' (file name); known: groundedness, "
        "citation_support, answer_relevance, completeness, refusal, context_relevance, "
        "knowledge_retention, task_completion, claim_check, nugget_support, "
        "groundedness_history, critique_qa, generate_nuggets",
        f"{fixtures}: prompt 'groundedness' has 6 valid fixture(s), at least 10 needed",
    ]
    assert check_fixtures(fixtures) == expected

    with pytest.raises(FixtureError) as err:
        load_fixtures(fixtures)
    assert err.value.problems == expected

    assert main([str(fixtures)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [*expected, f"13 problem(s) in {fixtures}"]


def test_prompt_must_match_its_file(fixtures):
    a = fixtures / "answer_relevance.jsonl"
    edit(a, 1, prompt="completeness")
    assert check_fixtures(fixtures)[0] == (
        f"{a}:1: prompt 'completeness' in the file for 'answer_relevance'"
    )


def test_too_few_fixtures_and_missing_files(fixtures):
    r = fixtures / "refusal.jsonl"
    r.write_text("\n".join(lines(r)[:9]) + "\n", encoding="utf-8")
    (fixtures / "completeness.jsonl").unlink()
    assert check_fixtures(fixtures) == [
        f"{fixtures}: prompt 'completeness' has 0 valid fixture(s), at least 10 needed",
        f"{fixtures}: prompt 'refusal' has 9 valid fixture(s), at least 10 needed",
    ]


def test_missing_directory(tmp_path):
    assert check_fixtures(tmp_path / "nowhere") == [
        f"{tmp_path / 'nowhere'}: no such fixtures directory"
    ]


def test_module_runs_as_a_script():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "ragproof_core.calibration.fixtures_check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "groundedness: 12 fixtures (0: 4, 0.5: 4, 1: 4)"
    # No package import loads the command's module before runpy runs it.
    assert "RuntimeWarning" not in done.stderr, done.stderr


def test_critique_fixtures_need_consistent_human_flags(fixtures):
    q = fixtures / "critique_qa.jsonl"
    edit(q, 1, human_flags=None)
    edit(q, 2, human_flags={"standalone": True, "answerable": "yes", "specific": True})
    edit(q, 3, human_score=1)  # its flags say "not standalone": the keep verdict is 0
    edit(q, 4, output={"answer": {"text": "Six tablets."}})
    assert check_fixtures(fixtures) == [
        f"{q}:1: a critique_qa fixture needs human_flags with exactly "
        "standalone, answerable, specific",
        f"{q}:2: human_flags values must be true or false",
        f"{q}:3: critique_qa human_score must be 0 for these human_flags "
        "(1 exactly when all three are true)",
        f"{q}:4: a critique_qa fixture needs output.answer.retrieved_chunks",
        f"{fixtures}: prompt 'critique_qa' has 8 valid fixture(s), at least 10 needed",
    ]


def test_critique_fixtures_carry_the_human_flags_to_the_scorer():
    fixture = next(f for f in load_fixtures() if f.id == "q05-finance-card-fee-abroad")
    assert fixture.case.metadata == {
        "human_flags": {"standalone": True, "answerable": False, "specific": True}
    }
    assert (fixture.human_score, [c.id for c in fixture.output.answer.retrieved_chunks]) == (
        0.0,
        ["fin-everyday-4"],
    )


def test_a_context_relevance_fixture_needs_retrieved_chunks_and_no_answer(fixtures):
    c = fixtures / "context_relevance.jsonl"
    edit(c, 1, output={"answer": {"text": "no retrieval here"}})
    edit(c, 2, output={"retrieved": [{"id": "", "text": "x"}]})
    assert check_fixtures(fixtures) == [
        f"{c}:1: a context_relevance fixture needs output.retrieved, a non-empty list of chunks",
        f'{c}:2: output.retrieved[0] must be {{"id": non-empty string, "text": string}}',
        f"{c}:2: a context_relevance fixture needs output.retrieved, a non-empty list of chunks",
    ]
    fixture = next(f for f in load_fixtures() if f.prompt == "context_relevance")
    assert (fixture.output.answer, [c.id for c in fixture.output.retrieved]) == (
        None,
        ["acme-cli-logging#1", "acme-cli-logging#2"],
    )


def test_a_task_completion_fixture_needs_well_formed_steps(fixtures):
    t = fixtures / "task_completion.jsonl"
    edit(t, 1, output={"answer": {"text": "Refunded."}})
    edit(t, 2, output={"answer": {"text": "Refunded.", "steps": [{"type": "call"}]}})
    assert check_fixtures(fixtures) == [
        f"{t}:1: a task_completion fixture needs output.answer.steps",
        f"{t}:2: output.answer.steps: step 0: step 'type' must be 'retrieve' or 'tool', got 'call'",
    ]


def test_hand_worked_verdicts_must_give_the_human_score(fixtures):
    """claim_check's human_claims and nugget_support's human_support are the verdicts the
    human score was worked out from: a score that disagrees with them, claims naming a
    chunk the fixture lacks, or support verdicts not one per nugget are problems."""
    claims = fixtures / "claim_check.jsonl"
    first = json.loads(lines(claims)[0])
    assert first["human_score"] == 0
    edit(claims, 1, human_score=1)
    stray = json.loads(lines(claims)[1])["human_claims"]
    stray["response_claims"][0]["chunk_ids"] = ["nowhere-9"]
    edit(claims, 2, human_claims=stray)
    edit(claims, 3, human_claims={"response_claims": []})
    nuggets = fixtures / "nugget_support.jsonl"
    edit(nuggets, 1, human_support=["full"])
    edit(nuggets, 2, human_score=0.5)
    edit(nuggets, 3, case={"question": "What is the refund policy?"})
    written = fixtures / "generate_nuggets.jsonl"
    edit(written, 1, human_score=0.5)
    human = json.loads(lines(written)[1])["human_nuggets"]
    human[0]["terms"] = ["never written in its text"]
    edit(written, 2, human_nuggets=human)
    problems = check_fixtures(fixtures)
    assert problems[:2] == [
        f"{claims}:1: human_score must be 0, the band of generation.hallucination of "
        "human_claims (0)",
        f"{claims}:2: human_claims names chunks the fixture does not have: ['nowhere-9']",
    ]
    assert problems[2].startswith(
        f"{claims}:3: human_claims must be a claim_check reply: missing key "
        '"reference_claims" in the reply object'
    )
    assert problems[3:8] == [
        f"{written}:1: a generate_nuggets human_score is 1 (the human's own nuggets)",
        f"{written}:2: human_nuggets must agree with themselves (each text holding its own "
        "terms): missing: The warranty lasts two years | extra: The warranty lasts two years",
        f'{nuggets}:1: human_support must list "full", "partial" or "none" for each of the '
        "3 nuggets, in order",
        f"{nuggets}:2: human_score must be 1, the band of generation.nugget_recall of "
        "human_support (1)",
        f"{nuggets}:3: a nugget_support fixture needs case.nuggets, a non-empty list",
    ]
