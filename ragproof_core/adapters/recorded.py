"""Replay pipeline outputs recorded elsewhere (CONTRACT section 2).

The file is JSON Lines, one line per case::

    {"case_id": "c1", "retrieve": [{"id": "d1#0", "text": "..."}],
     "answer": {"text": "...", "retrieved_chunks": [...], "citations": ["d1#0"]}}
    {"case_id": "c2", "error": "upstream timed out"}

- ``retrieve`` absent (or null): retrieval is not exposed for that case, so
  retrieval metrics skip it.
- ``retrieve`` without ``answer``: a retrieval-only case (an imported TREC
  run, CONTRACT section 11); metrics that need an answer skip it.
- ``error`` present: the case is a case failure carrying that message.
- a case of the dataset with no line: a case failure
  ``no recorded output for case <id>``.
- a line with none of ``retrieve``, ``answer`` and ``error`` is malformed.
- other keys are ignored: recordings may carry data ragproof does not use.

The whole file is parsed and validated when the adapter is built, so a bad
recording is reported as ``PATH:LINE: reason`` before any case runs. Outputs
are keyed by case id, not question, which is why this adapter implements the
runner's case-aware ``run_case`` hook; replay is then one dict lookup per case.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from ragproof_core.adapters.coerce import AdapterOutputError, to_answer, to_chunks
from ragproof_core.adapters.loading import AdapterLoadError
from ragproof_core.dataset import DatasetError, iter_json_lines
from ragproof_core.gc_pause import collector_paused
from ragproof_core.model import Answer, Case, CaseOutput
from ragproof_core.schema_errors import describe


class RecordedAdapter:
    """Replays ``path`` (JSON Lines of recorded outputs) case by case."""

    # Replaying costs nothing, so `ragproof run --dry-run` may run it (dry_run.py).
    free_to_call = True

    def __init__(self, path: str) -> None:
        self.path = str(path)
        self._outputs: dict[str, CaseOutput] = {}
        first_line_of: dict[str, int] = {}
        texts: dict[str, str] = {}
        try:
            with collector_paused():
                for line, row in iter_json_lines(self.path):
                    try:
                        output = _parse_line(row)
                    except ValueError as exc:
                        raise AdapterLoadError(f"{self.path}:{line}: {exc}") from None
                    earlier = first_line_of.setdefault(output.case_id, line)
                    if earlier != line:
                        raise AdapterLoadError(
                            f"{self.path}:{line}: duplicate case_id {output.case_id!r} "
                            f"(first used on line {earlier})"
                        )
                    _share_texts(output, texts)
                    self._outputs[output.case_id] = output
        except DatasetError as exc:
            raise AdapterLoadError(str(exc)) from None

    def __len__(self) -> int:
        return len(self._outputs)

    def __repr__(self) -> str:
        return f"RecordedAdapter(path={self.path!r})"

    async def run_case(self, case: Case) -> CaseOutput:
        """The recorded output for ``case`` (shared, immutable), or a case failure."""
        output = self._outputs.get(case.id)
        if output is None:
            return CaseOutput(case.id, error=f"no recorded output for case {case.id}")
        return output

    def answer(self, question: str) -> Answer:
        """Not usable: recordings are keyed by case id, and the runner calls ``run_case``.

        Present because every adapter has ``answer()`` (CONTRACT section 2).
        """
        raise TypeError(
            "RecordedAdapter replays outputs by case id; call run_case(case), not answer()"
        )


def _share_texts(output: CaseOutput, texts: dict[str, str]) -> None:
    """Keep one copy of each chunk text: recordings repeat the same passages across
    cases (many questions retrieve the same documents), and a 100,000-case replay
    otherwise holds every copy in memory."""
    groups = (output.retrieved, output.answer.retrieved_chunks if output.answer else None)
    for chunks in groups:
        for chunk in chunks or ():
            chunk.text = texts.setdefault(chunk.text, chunk.text)


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


class RecordedLine(BaseModel):
    """One recorded-output line (CONTRACT section 2). Keys ragproof does not use are
    ignored (recordings often carry their own bookkeeping); ``null`` means absent.
    ``retrieve`` and ``answer`` are checked by the same coercion as live adapter output."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    case_id: Annotated[str, AfterValidator(_non_blank)]
    retrieve: list[Any] | None = None
    answer: Any = None
    error: Annotated[str, AfterValidator(_non_blank)] | None = None


def _parse_line(row: Any) -> CaseOutput:
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    try:
        line = RecordedLine.model_validate(row)
    except ValidationError as exc:
        raise ValueError(describe(exc, mapping="a JSON object", noun="field")) from None
    if line.error is not None:
        return CaseOutput(line.case_id, error=line.error)
    if line.answer is None and line.retrieve is None:
        raise ValueError("line has none of 'retrieve', 'answer' or 'error'")
    retrieved = answer = None
    if line.retrieve is not None:
        try:
            retrieved = to_chunks(line.retrieve)
        except AdapterOutputError as exc:
            raise ValueError(f"retrieve: {exc}") from None
    if line.answer is not None:
        try:
            answer = to_answer(line.answer)
        except AdapterOutputError as exc:
            raise ValueError(f"answer: {exc}") from None
    return CaseOutput(line.case_id, answer=answer, retrieved=retrieved)
