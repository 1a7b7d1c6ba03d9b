"""The generation loop: write a question per slot, drop near-duplicates, critique,
keep or replace (CONTRACT section 13).

A *slot* is one case to be written: ``count`` qa slots, then ``unanswerable``
slots. Slots are filled in rounds; round ``a`` is every still-open slot's
attempt ``a``:

1. every open slot asks the judge for a question (concurrently), with a prompt
   naming its slot and attempt number, so a retry is a new request and a new
   cache key, never a cached repeat of the rejected question;
2. in slot order, a question that repeats (``dedupe``) one already kept, or one
   written earlier in this round, is dropped without a critique;
3. the rest are critiqued (prompt ``critique_qa``, concurrently);
4. in slot order, a qa question is kept when the critique says standalone,
   answerable and specific; an unanswerable one when it says standalone and
   specific and *not* answerable from the chunks it was written beside.

A slot still open after ``max_attempts`` rounds stays unfilled and is reported.
A judge reply that fails validation gets the session's single repair retry; a
second failure (or a transport failure) is counted as a judge error and uses
up that attempt; the run goes on. Duplicates are decided in slot order after
each concurrent phase, so the output never depends on which reply came first.

``JudgeStopped`` (the budget, or a judge that cannot answer) stops the loop:
questions already kept stay kept (critiques that finished in the last round
still count), nothing new starts.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragproof_core.generate.corpus import CorpusChunk
from ragproof_core.generate.dedupe import QuestionIndex
from ragproof_core.generate.sampling import ChunkSampler, SamplingError, spread
from ragproof_core.judge.types import Judge, JudgeStopped, JudgeVerdict

QA = "qa"
UNANSWERABLE = "unanswerable"
KINDS = (QA, UNANSWERABLE)
GENERATE_PROMPT = {QA: "generate_qa", UNANSWERABLE: "generate_unanswerable"}
CRITIQUE_PROMPT = "critique_qa"
# The prompts `generate qa` writes with: their hashes go into each row's metadata.
QA_PROMPTS: tuple[str, ...] = (*GENERATE_PROMPT.values(), CRITIQUE_PROMPT)
DEFAULT_MAX_ATTEMPTS = 3
# Chunks an unanswerable question is written beside: enough to show the topic,
# few enough that "not answerable from these chunks" is a meaningful check.
UNANSWERABLE_CHUNKS = 2

# Why the critique rejected a question, by kind: (flag, value that rejects, reason).
REJECTIONS: dict[str, tuple[tuple[str, bool, str], ...]] = {
    QA: (
        ("standalone", False, "not standalone"),
        ("answerable", False, "not answerable from its chunks"),
        ("specific", False, "not specific"),
    ),
    UNANSWERABLE: (
        ("standalone", False, "not standalone"),
        ("answerable", True, "answerable from its chunks"),
        ("specific", False, "not specific"),
    ),
}


class GenerationInputError(ValueError):
    """The request cannot be generated (bad counts, a corpus too small for it)."""


@dataclass(frozen=True, slots=True)
class GenerationPlan:
    count: int
    unanswerable: int = 0
    seed: int = 0
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    multi_chunk: int = 0  # of the ``count`` qa slots, how many use two chunks of one document

    def __post_init__(self) -> None:
        if self.count < 0:
            raise GenerationInputError(f"--count must be 0 or more, got {self.count}")
        if self.unanswerable < 0:
            raise GenerationInputError(f"--unanswerable must be 0 or more, got {self.unanswerable}")
        if self.count + self.unanswerable < 1:
            raise GenerationInputError("nothing to generate: --count and --unanswerable are 0")
        if self.max_attempts < 1:
            raise GenerationInputError(
                f"--max-attempts must be at least 1, got {self.max_attempts}"
            )
        if not 0 <= self.multi_chunk <= self.count:
            raise GenerationInputError(
                f"--multi-chunk must be between 0 and --count ({self.count}), "
                f"got {self.multi_chunk}"
            )


@dataclass(frozen=True, slots=True)
class Slot:
    kind: str
    number: int  # 1-based within its kind: the number the prompt names
    sampler: ChunkSampler
    position: int  # 0-based position in the sampler's stream

    def chunks(self, attempt: int) -> tuple[CorpusChunk, ...]:
        return self.sampler.pick(self.position, attempt)

    def generate_inputs(self, attempt: int) -> dict[str, Any]:
        return {
            "chunks": [chunk.as_input() for chunk in self.chunks(attempt)],
            "slot": f"{self.kind} slot {self.number}",
            "attempt": f"attempt {attempt + 1}",
        }


@dataclass(frozen=True, slots=True)
class KeptQuestion:
    kind: str
    slot: int
    attempt: int  # 1-based
    question: str
    answer: str | None  # qa only
    source_ids: tuple[str, ...]  # the chunks it was written from (or beside)


@dataclass
class KindTally:
    """What happened to one kind's slots; the printed summary reads these."""

    slots: int = 0
    kept: int = 0
    generated: int = 0  # questions the judge wrote (valid replies)
    duplicates: int = 0
    critiqued: int = 0
    rejected: int = 0
    rejected_because: Counter[str] = field(default_factory=Counter)
    judge_errors: int = 0  # generation or critique questions that failed twice
    unfilled: int = 0  # slots still open after every attempt (not counting a budget stop)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slots": self.slots,
            "kept": self.kept,
            "generated": self.generated,
            "duplicates": self.duplicates,
            "critiqued": self.critiqued,
            "rejected": self.rejected,
            "rejected_because": dict(sorted(self.rejected_because.items())),
            "judge_errors": self.judge_errors,
            "unfilled": self.unfilled,
        }


@dataclass
class GenerationOutcome:
    kept: list[KeptQuestion]
    tallies: dict[str, KindTally]
    aborted: str | None = None  # why the judge stopped the loop (its budget, or unavailable)
    status: str = "completed"  # or the judge's stop's status (aborted:budget, aborted:judge)

    def of_kind(self, kind: str) -> list[KeptQuestion]:
        return [q for q in self.kept if q.kind == kind]


@dataclass(frozen=True, slots=True)
class _Candidate:
    slot: Slot
    attempt: int
    question: str
    answer: str | None
    chunks: tuple[CorpusChunk, ...]

    def critique_inputs(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer or "",
            "chunks": [chunk.as_input() for chunk in self.chunks],
        }


def plan_slots(chunks: Sequence[CorpusChunk], plan: GenerationPlan) -> list[Slot]:
    """Every slot in processing order: qa slots (1..count), then unanswerable ones."""
    try:
        single = ChunkSampler(chunks, plan.seed, "qa", 1)
        double = ChunkSampler(chunks, plan.seed, "qa-multi", 2) if plan.multi_chunk else None
        topic = ChunkSampler(chunks, plan.seed, UNANSWERABLE, _topic_size(chunks))
    except SamplingError as exc:
        raise GenerationInputError(f"--multi-chunk: {exc}") from None
    slots: list[Slot] = []
    used = Counter[str]()
    for number, multi in enumerate(spread(plan.count, plan.multi_chunk), start=1):
        sampler = double if multi else single
        assert sampler is not None
        slots.append(Slot(QA, number, sampler, used[sampler.size]))
        used[sampler.size] += 1
    for number in range(1, plan.unanswerable + 1):
        slots.append(Slot(UNANSWERABLE, number, topic, number - 1))
    return slots


def _topic_size(chunks: Sequence[CorpusChunk]) -> int:
    documents = Counter(chunk.document_id for chunk in chunks)
    return UNANSWERABLE_CHUNKS if max(documents.values()) >= UNANSWERABLE_CHUNKS else 1


def rejection_reasons(kind: str, verdict: dict[str, Any]) -> list[str]:
    """Why the critique rejects a question of ``kind``; empty means keep it."""
    return [reason for flag, rejects, reason in REJECTIONS[kind] if verdict[flag] is rejects]


async def generate_questions(
    chunks: Sequence[CorpusChunk], plan: GenerationPlan, judge: Judge
) -> GenerationOutcome:
    slots = plan_slots(chunks, plan)
    tallies = {kind: KindTally(slots=sum(s.kind == kind for s in slots)) for kind in KINDS}
    kept: dict[tuple[str, int], KeptQuestion] = {}
    index = QuestionIndex()
    open_slots = slots
    stop: JudgeStopped | None = None
    for attempt in range(plan.max_attempts):
        if not open_slots:
            break
        replies = await _gather(
            judge.ask(GENERATE_PROMPT[s.kind], s.generate_inputs(attempt)) for s in open_slots
        )
        stop = _stop(replies)
        if stop:
            break  # written but not critiqued: nothing from this round is kept
        candidates = _screen(open_slots, attempt, replies, index, tallies)
        verdicts = await _gather(
            judge.ask(CRITIQUE_PROMPT, c.critique_inputs()) for c in candidates
        )
        stop = _stop(verdicts)
        for candidate, verdict in zip(candidates, verdicts, strict=True):
            if isinstance(verdict, JudgeStopped):
                continue
            question = _judge(candidate, verdict, tallies[candidate.slot.kind])
            if question is not None:
                kept[(question.kind, question.slot)] = question
                index.add(question.question)
        open_slots = [s for s in open_slots if (s.kind, s.number) not in kept]
        if stop:
            break
    if not stop:
        for slot in open_slots:
            tallies[slot.kind].unfilled += 1
    for question in kept.values():
        tallies[question.kind].kept += 1
    ordered = sorted(kept.values(), key=lambda q: (KINDS.index(q.kind), q.slot))
    if stop is None:
        return GenerationOutcome(ordered, tallies)
    return GenerationOutcome(ordered, tallies, str(stop), stop.status)


async def _gather(calls: Iterable[Awaitable[JudgeVerdict]]) -> list[JudgeVerdict | JudgeStopped]:
    """Every call's verdict, or the judge's stop; any other exception is a bug and raises."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, JudgeStopped):
            raise result
    return results


def _stop(results: Sequence[JudgeVerdict | JudgeStopped]) -> JudgeStopped | None:
    return next((r for r in results if isinstance(r, JudgeStopped)), None)


def _screen(
    slots: Sequence[Slot],
    attempt: int,
    replies: Sequence[JudgeVerdict | JudgeStopped],
    index: QuestionIndex,
    tallies: dict[str, KindTally],
) -> list[_Candidate]:
    """In slot order: the valid, non-duplicate questions of this round."""
    this_round = QuestionIndex(index.threshold)
    candidates = []
    for slot, reply in zip(slots, replies, strict=True):
        tally = tallies[slot.kind]
        assert isinstance(reply, JudgeVerdict)
        if not reply.ok or reply.data is None:
            tally.judge_errors += 1
            continue
        tally.generated += 1
        question = reply.data["question"].strip()
        if index.duplicate_of(question) is not None or this_round.duplicate_of(question):
            tally.duplicates += 1
            continue
        this_round.add(question)
        answer = reply.data["answer"].strip() if slot.kind == QA else None
        candidates.append(_Candidate(slot, attempt, question, answer, slot.chunks(attempt)))
    return candidates


def _judge(candidate: _Candidate, verdict: JudgeVerdict, tally: KindTally) -> KeptQuestion | None:
    if not verdict.ok or verdict.data is None:
        tally.judge_errors += 1
        return None
    tally.critiqued += 1
    reasons = rejection_reasons(candidate.slot.kind, verdict.data)
    if reasons:
        tally.rejected += 1
        tally.rejected_because.update(reasons)
        return None
    return KeptQuestion(
        kind=candidate.slot.kind,
        slot=candidate.slot.number,
        attempt=candidate.attempt + 1,
        question=candidate.question,
        answer=candidate.answer,
        source_ids=tuple(chunk.id for chunk in candidate.chunks),
    )
