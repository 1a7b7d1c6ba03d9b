"""The human-scored calibration fixtures: their format, loading and checking.

One JSON Lines file per judge prompt in ``fixtures/`` (``groundedness.jsonl``,
...), each line one fixture::

    {"id": "g01-...", "prompt": "groundedness",
     "case": {"question": "...", "expected_answer": "..."},
     "output": {"answer": {"text": "...", "retrieved_chunks": [{"id": "...", "text": "..."}],
                           "citations": ["..."]}},
     "human_score": 0 | 0.5 | 1, "reason": "one line why"}

For ``refusal`` the human score is 1 when the answer refused, else 0.
``critique_qa`` fixtures (the test-set generation gate) also carry
``human_flags``; their rules are in ``ragproof_core.calibration.critique``. A
``context_relevance`` fixture grades retrieval, not an answer: its output is
``{"retrieved": [{"id": ..., "text": ...}, ...]}`` (the ``retrieve()`` result,
every chunk shown to the judge) and its human score is the mean of the human's
per-chunk grades (relevant 1, partial 0.5, irrelevant 0), one of 0, 0.5 or 1.

Conversations (CONTRACT section 16): a fixture's ``case`` may carry
``history``, the earlier turns as ``[{"role": "user" | "assistant", "content":
str}, ...]`` (user first, alternating), and is then judged as that
conversation's next turn. ``groundedness_history.jsonl`` holds groundedness
fixtures with a history (prompt ``groundedness_history``: the groundedness
prompt with its history rules, scored by ``generation.groundedness``);
``knowledge_retention.jsonl`` holds conversations: the history, then the last
turn's question and answer, and the human's share of assistant turns (from the
second on) that kept what the user said.

``claim_check.jsonl`` and ``nugget_support.jsonl`` carry the verdicts the human
worked out by hand, which their human scores are checked against
(``worked_verdicts``); ``generate_nuggets.jsonl`` holds expected answers with the
human's nuggets (``nugget_generation``), and ``output`` is ``{}``.

``task_completion.jsonl`` holds agents' answers (CONTRACT section 17): its
``output.answer`` carries ``steps`` (retrieve and tool steps) and the human
score is complete 1, partial 0.5, failed 0.

``check_fixtures`` lists every problem at once (a person fixing fixtures wants
the whole list, not one error per run); ``load_fixtures`` refuses a directory
with any. Run ``python -m ragproof_core.calibration.fixtures_check [DIR]`` (the
command, ``fixtures_check.py``) to check.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragproof_core.adapters.coerce import AdapterOutputError, to_steps
from ragproof_core.calibration import critique, nugget_generation, worked_verdicts
from ragproof_core.judge.prompts import PROMPT_NAMES
from ragproof_core.model import Answer, Case, CaseOutput, Chunk, Message, Nugget, Step

# The groundedness prompt judging a conversation's later turn, with its history.
GROUNDEDNESS_HISTORY = "groundedness_history"
# Every evaluation prompt, plus the critique gate of `ragproof generate qa` and the nugget
# writer of `ragproof generate nuggets`.
CALIBRATED_PROMPTS: tuple[str, ...] = (
    *PROMPT_NAMES,
    GROUNDEDNESS_HISTORY,
    critique.PROMPT,
    nugget_generation.PROMPT,
)
# The fixtures that need the case's expected answer.
NEEDS_EXPECTED_ANSWER = frozenset({"completeness", "claim_check", nugget_generation.PROMPT})
# The fixtures that are a conversation's later turn: they need a history.
NEEDS_HISTORY = frozenset({GROUNDEDNESS_HISTORY, "knowledge_retention"})
# The fixtures of an agent's answer: they need its steps.
NEEDS_STEPS = frozenset({"task_completion"})

DEFAULT_DIRECTORY = Path(__file__).with_name("fixtures")
COMBINED_FIXTURES = "combined"
MIN_PER_PROMPT = 10
HUMAN_SCORES = (0.0, 0.5, 1.0)
REQUIRED_KEYS = ("id", "prompt", "case", "output", "human_score", "reason")


class FixtureError(ValueError):
    """The fixtures directory has problems; ``problems`` lists them all."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("bad calibration fixtures:\n" + "\n".join(problems))


@dataclass(frozen=True, slots=True)
class Fixture:
    """One human-scored example: what the judge sees, and what the human said."""

    id: str
    prompt: str
    case: Case
    output: CaseOutput
    human_score: float
    reason: str
    where: str  # "path:line", for messages


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _score(value: Any, scores: Sequence[float] | None = HUMAN_SCORES) -> float | None:
    """The human score if allowed: one of ``scores``, or any in [0, 1] when None."""
    # bool is an int in Python: `true` must not pass for 1.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if scores is None:
        return float(value) if 0.0 <= float(value) <= 1.0 else None
    return float(value) if float(value) in scores else None


def _chunks(
    value: Any, problems: list[str], where: str, label: str = "output.answer.retrieved_chunks"
) -> tuple[Chunk, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        problems.append(f"{where}: {label} must be a list")
        return None
    chunks = []
    for i, item in enumerate(value):
        if not (
            isinstance(item, dict) and _text(item.get("id")) and isinstance(item.get("text"), str)
        ):
            problems.append(
                f'{where}: {label}[{i}] must be {{"id": non-empty string, "text": string}}'
            )
            continue
        chunks.append(Chunk(item["id"], item["text"]))
    return tuple(chunks)


def parse_fixture(
    obj: Any,
    where: str,
    file_prompt: str,
    known: Sequence[str] = CALIBRATED_PROMPTS,
    scores: Sequence[float] | None = HUMAN_SCORES,
) -> tuple[Fixture | None, list[str]]:
    """One fixture from one decoded line, or None with the problems found. ``known``:
    the prompts it may name; ``scores``: the human scores allowed (None: any in [0, 1])."""
    if not isinstance(obj, dict):
        return None, [f"{where}: a fixture must be a JSON object"]
    missing = [key for key in REQUIRED_KEYS if key not in obj]
    if missing:
        return None, [f"{where}: missing key(s): {', '.join(missing)}"]
    problems: list[str] = []
    if not _text(obj["id"]):
        problems.append(f"{where}: id must be a non-empty string")
    prompt = obj["prompt"]
    if prompt not in known:
        problems.append(f"{where}: unknown prompt {prompt!r}; known: {', '.join(known)}")
    elif prompt != file_prompt:
        problems.append(f"{where}: prompt {prompt!r} in the file for {file_prompt!r}")
    human = _score(obj["human_score"], scores)
    if human is None:
        allowed = "0, 0.5 or 1" if scores == HUMAN_SCORES else "a number from 0 to 1"
        problems.append(f"{where}: human_score must be {allowed}, got {obj['human_score']!r}")
    elif prompt == "refusal" and human == 0.5:
        problems.append(f"{where}: refusal human_score must be 0 or 1 (refused), got 0.5")
    if not _text(obj["reason"]):
        problems.append(f"{where}: reason must be a non-empty string")

    case_raw, output_raw = obj["case"], obj["output"]
    history = _history(case_raw, problems, where)
    if prompt in NEEDS_HISTORY and not history:
        problems.append(f"{where}: a {prompt} fixture needs case.history (the earlier turns)")
    nuggets = _nuggets(case_raw, problems, where)
    question = expected = None
    if not isinstance(case_raw, dict) or not _text(case_raw.get("question")):
        problems.append(f"{where}: case must be an object with a non-empty question")
    else:
        question = case_raw["question"]
        expected = case_raw.get("expected_answer")
        if expected is not None and not isinstance(expected, str):
            problems.append(f"{where}: case.expected_answer must be a string")
            expected = None
    answer_raw = output_raw.get("answer") if isinstance(output_raw, dict) else None
    answer = None
    retrieved = None
    if prompt == nugget_generation.PROMPT:
        # The writer reads the case alone: nothing of an output is shown to it.
        if output_raw != {}:
            problems.append(f"{where}: a {prompt} fixture's output is {{}}")
    elif prompt == "context_relevance":
        raw_chunks = output_raw.get("retrieved") if isinstance(output_raw, dict) else None
        retrieved = _chunks(raw_chunks, problems, where, "output.retrieved")
        if not retrieved:
            problems.append(
                f"{where}: a context_relevance fixture needs output.retrieved, "
                "a non-empty list of chunks"
            )
    elif not isinstance(answer_raw, dict) or not isinstance(answer_raw.get("text"), str):
        problems.append(f'{where}: output must be {{"answer": {{"text": string, ...}}}}')
    else:
        chunks = _chunks(answer_raw.get("retrieved_chunks"), problems, where)
        citations = answer_raw.get("citations")
        if citations is not None and not (
            isinstance(citations, list) and all(_text(c) for c in citations)
        ):
            problems.append(f"{where}: output.answer.citations must be a list of chunk ids")
            citations = None
        steps = _steps(answer_raw.get("steps"), problems, where)
        answer = Answer(
            answer_raw["text"],
            chunks,
            None if citations is None else tuple(citations),
            steps=steps,
        )
        if prompt in NEEDS_STEPS and answer_raw.get("steps") is None:
            problems.append(f"{where}: a {prompt} fixture needs output.answer.steps")
        # A fixture the metric would skip can never be scored: catch it here,
        # not as a calibration failure.
        if prompt in ("groundedness", GROUNDEDNESS_HISTORY, "citation_support") and chunks is None:
            problems.append(f"{where}: a {prompt} fixture needs output.answer.retrieved_chunks")
        if prompt == "citation_support" and not citations:
            problems.append(f"{where}: a citation_support fixture needs output.answer.citations")
    if prompt in NEEDS_EXPECTED_ANSWER and question is not None and not _text(expected):
        problems.append(f"{where}: a {prompt} fixture needs case.expected_answer")
    if prompt == critique.PROMPT:
        problems.extend(critique.fixture_problems(obj, where))
    if prompt == nugget_generation.PROMPT:
        problems.extend(nugget_generation.fixture_problems(obj, where))
    if answer is not None:
        chunk_ids = None
        if answer.retrieved_chunks is not None:
            chunk_ids = [c.id for c in answer.retrieved_chunks]
        problems.extend(worked_verdicts.fixture_problems(prompt, obj, where, chunk_ids, nuggets))

    if problems:
        return None, problems
    fixture_id = obj["id"]
    return (
        Fixture(
            id=fixture_id,
            prompt=prompt,
            case=Case(
                id=fixture_id,
                question=question,
                expected_answer=expected,
                # The critique and nugget-writer scorers compare the judge's reply with these.
                metadata={
                    key: obj[key]
                    for key in ("human_flags", nugget_generation.HUMAN_NUGGETS)
                    if key in obj
                },
                nuggets=nuggets,
            ),
            output=CaseOutput(
                case_id=fixture_id, answer=answer, retrieved=retrieved, history=history
            ),
            human_score=human,
            reason=obj["reason"],
            where=where,
        ),
        [],
    )


def _steps(value: Any, problems: list[str], where: str) -> tuple[Step, ...] | None:
    """``output.answer.steps``, an agent's trajectory in the shape of CONTRACT section 17."""
    if value is None:
        return None
    try:
        return to_steps(value)
    except AdapterOutputError as exc:
        problems.append(f"{where}: output.answer.steps: {exc}")
        return None


def _nuggets(case_raw: Any, problems: list[str], where: str) -> tuple[Nugget, ...] | None:
    """``case.nuggets``: ``[{"text": str, "vital": bool}, ...]`` (CONTRACT section 20)."""
    raw = case_raw.get("nuggets") if isinstance(case_raw, dict) else None
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(
        isinstance(n, dict) and _text(n.get("text")) and isinstance(n.get("vital"), bool)
        for n in raw
    ):
        problems.append(f'{where}: case.nuggets must be a list of {{"text": text, "vital": bool}}')
        return None
    return tuple(Nugget(n["text"], n["vital"]) for n in raw)


def _history(case_raw: Any, problems: list[str], where: str) -> tuple[Message, ...] | None:
    """``case.history``: user and assistant messages alternating, user first."""
    raw = case_raw.get("history") if isinstance(case_raw, dict) else None
    if raw is None:
        return None
    messages = []
    for i, item in enumerate(raw if isinstance(raw, list) else [None]):
        role = "user" if i % 2 == 0 else "assistant"
        if not (isinstance(item, dict) and item.get("role") == role and _text(item.get("content"))):
            problems.append(
                f'{where}: case.history[{i}] must be {{"role": "{role}", "content": text}} '
                "(user and assistant alternating, user first)"
            )
            return None
        messages.append(Message(role, item["content"]))
    if len(messages) % 2:
        problems.append(f"{where}: case.history must end with the assistant's answer")
        return None
    return tuple(messages)


def json_lines(path: Path, lines: list[str], problems: list[str]) -> Iterator[tuple[str, Any]]:
    """``(where, object)`` for each non-blank line, ``where`` being ``path:line``.

    A line that is not JSON is added to ``problems`` and skipped, so one pass
    reports every broken line of a file.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        yield where, obj


def scan_fixtures(directory: Path | None) -> tuple[list[Fixture], list[str]]:
    """The sound fixtures of ``directory`` (default: the shipped one) and every problem."""
    directory = DEFAULT_DIRECTORY if directory is None else Path(directory)
    if not directory.is_dir():
        return [], [f"{directory}: no such fixtures directory"]
    fixtures: list[Fixture] = []
    problems: list[str] = []
    first_seen: dict[str, str] = {}
    for path in sorted(directory.glob("*.jsonl")):
        if path.stem == COMBINED_FIXTURES:
            continue  # combined mode's multi-prompt fixtures (calibrate_combined.py)
        if path.stem not in CALIBRATED_PROMPTS:
            problems.append(
                f"{path}: unknown prompt {path.stem!r} (file name); "
                f"known: {', '.join(CALIBRATED_PROMPTS)}"
            )
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            problems.append(f"{path}: not UTF-8 ({exc})")
            continue
        fixtures += _file_fixtures(path, lines, path.stem, first_seen, problems)
    counts = Counter(f.prompt for f in fixtures)
    for prompt in CALIBRATED_PROMPTS:
        if counts[prompt] < MIN_PER_PROMPT:
            problems.append(
                f"{directory}: prompt {prompt!r} has {counts[prompt]} valid fixture(s), "
                f"at least {MIN_PER_PROMPT} needed"
            )
    return fixtures, problems


def _file_fixtures(
    path: Path,
    lines: list[str],
    prompt: str,
    seen: dict[str, str],
    problems: list[str],
    known: Sequence[str] = CALIBRATED_PROMPTS,
    scores: Sequence[float] | None = HUMAN_SCORES,
) -> list[Fixture]:
    """The fixtures of one file's lines for ``prompt``; each problem (a broken line, an id
    already in ``seen``) is added to ``problems``."""
    fixtures: list[Fixture] = []
    for where, obj in json_lines(path, lines, problems):
        # Duplicate ids are checked on the raw line, so a duplicate of a
        # broken fixture is still reported.
        if isinstance(obj, dict) and isinstance(obj.get("id"), str):
            earlier = seen.setdefault(obj["id"], where)
            if earlier != where:
                problems.append(f"{where}: duplicate id {obj['id']!r} (first at {earlier})")
                continue
        fixture, found = parse_fixture(obj, where, prompt, known, scores)
        problems.extend(found)
        if fixture is not None:
            fixtures.append(fixture)
    return fixtures


def load_metric_fixtures(path: Path | str, metric: str) -> list[Fixture]:
    """The human-scored fixtures of one rubric metric (``[[metric]] fixtures``): the shipped
    fixtures' shape with ``"prompt"`` the metric's name and ``human_score`` from 0 to 1.
    ``FixtureError`` lists every problem."""
    path = Path(path)
    problems: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise FixtureError([f"{path}: cannot read ({exc})"]) from None
    fixtures = _file_fixtures(path, lines, metric, {}, problems, known=(metric,), scores=None)
    if not problems and not fixtures:
        problems.append(f"{path}: no fixtures")
    if problems:
        raise FixtureError(problems)
    return fixtures


def check_fixtures(directory: Path | str | None = None) -> list[str]:
    """Every problem in the fixtures directory (default: the shipped one); empty when sound."""
    return scan_fixtures(None if directory is None else Path(directory))[1]


def load_fixtures(directory: Path | str | None = None) -> list[Fixture]:
    """The fixtures in file-name then line order; FixtureError when any problem is found."""
    fixtures, problems = scan_fixtures(None if directory is None else Path(directory))
    if problems:
        raise FixtureError(problems)
    return fixtures
