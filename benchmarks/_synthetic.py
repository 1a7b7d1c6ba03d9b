"""Seeded synthetic data shared by the benchmarks.

Retrieval cases are plain Python lists (ids as strings), the neutral starting
point every scorer converts from: ragproof builds its ``Case``/``CaseOutput``
objects from them, pytrec_eval and ranx their dicts. The recorded-run files are
what a user would hand ``ragproof run``: a dataset and a ``RecordedAdapter``
outputs file (CONTRACT sections 1 and 2).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

RETRIEVED_PER_CASE = 10
EMPTY_RETRIEVAL_SHARE = 0.02
# Each case draws its 10 retrieved ids, with replacement, from its relevant ids
# plus a few distractors, so duplicates are common (as with overlapping chunks).
_DISTRACTORS_PER_CASE = 5
_CORPUS_SIZE = 50_000


@dataclass(frozen=True, slots=True)
class RetrievalData:
    case_ids: list[str]
    retrieved: list[list[str]]  # ranked, with duplicates; [] for an empty retrieval
    relevant: list[list[str]]  # 1 to 5 ids

    def __len__(self) -> int:
        return len(self.case_ids)

    @property
    def empty_retrievals(self) -> int:
        return sum(1 for ids in self.retrieved if not ids)

    @property
    def duplicated_rankings(self) -> int:
        return sum(1 for ids in self.retrieved if len(set(ids)) < len(ids))


def retrieval_data(n: int, seed: int = 7) -> RetrievalData:
    rng = random.Random(seed)
    corpus = [f"doc{i:05d}#{i % 7}" for i in range(_CORPUS_SIZE)]
    case_ids, retrieved, relevant = [], [], []
    for i in range(n):
        picks = rng.sample(corpus, rng.randint(1, 5) + _DISTRACTORS_PER_CASE)
        rel = picks[: len(picks) - _DISTRACTORS_PER_CASE]
        case_ids.append(f"case-{i:07d}")
        relevant.append(rel)
        if rng.random() < EMPTY_RETRIEVAL_SHARE:
            retrieved.append([])
        else:
            retrieved.append(rng.choices(picks, k=RETRIEVED_PER_CASE))
    return RetrievalData(case_ids, retrieved, relevant)


# -- recorded runs for `ragproof run` ----------------------------------------------------

_TEXT = (
    "the retention policy applies to archived records kept beyond the statutory period "
    "while access logs rotate weekly and backups replicate nightly across two regions "
    "with encryption at rest and keys rotated every ninety days by the platform team"
)
_WORDS = tuple(_TEXT.split())
_GENERATOR_VERSION = 1  # bump when the generated files change


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


@dataclass(frozen=True, slots=True)
class RecordedRun:
    dataset: Path
    outputs: Path
    config: Path
    cases: int
    qa_cases: int
    failures: int  # recorded error lines
    retrieval_scored: int  # qa cases with a recorded retrieval: what the retrieval metrics score

    def run_command(self, *extra: str) -> list[str]:
        """``ragproof run`` on this recording, JSON out, plus ``extra`` flags."""
        from benchmarks._common import RAGPROOF

        return [
            RAGPROOF, "run", "--dataset", str(self.dataset), "--config", str(self.config),
            *extra, "--json",
        ]  # fmt: skip

    @property
    def megabytes(self) -> float:
        return (self.dataset.stat().st_size + self.outputs.stat().st_size) / 1e6


def write_recorded_run(
    folder: Path,
    n: int,
    seed: int = 11,
    concurrency: int = 16,
    qa_only: bool = False,
) -> RecordedRun:
    """A dataset of ``n`` cases and its recorded outputs, plus a ragproof.toml.

    Mixed kinds by default (90% qa, 5% unanswerable, 5% injection), with 0.5%
    recorded failures and 2% of lines without ``retrieve``; ``qa_only`` gives
    clean qa cases that each ask the judge five questions (groundedness,
    citation support, relevance, completeness, over-refusal).
    Each case retrieves 10 chunks of about 200 characters (a chunk id always has
    the same text); answers cite two of them and carry no chunks of their own, so
    the judge's context is the retrieval.
    """
    folder.mkdir(parents=True, exist_ok=True)
    dataset = folder / "cases.jsonl"
    outputs = folder / "outputs.jsonl"
    config = folder / "ragproof.toml"
    stamp = folder / "generated.json"
    params = {"version": _GENERATOR_VERSION, "n": n, "seed": seed, "qa_only": qa_only}
    if stamp.exists():
        # Seeded, so the same parameters give the same files: reuse them.
        saved = json.loads(stamp.read_text(encoding="utf-8"))
        if saved["params"] == params:
            _write_config(config, concurrency)
            return RecordedRun(dataset, outputs, config, **saved["counts"])
    stamp.unlink(missing_ok=True)  # an interrupted write must not look complete
    rng = random.Random(seed)
    chunk_ids = [f"doc{i:05d}#{i % 4}" for i in range(20_000)]
    chunk_text = {cid: sentence(random.Random(cid), 32) for cid in chunk_ids}
    qa = failures = retrieval_scored = 0
    with dataset.open("w", encoding="utf-8") as ds, outputs.open("w", encoding="utf-8") as out:
        for i in range(n):
            case_id = f"case-{i:07d}"
            roll = 0.0 if qa_only else rng.random()
            kind = "qa" if roll < 0.90 else "unanswerable" if roll < 0.95 else "injection"
            picks = rng.sample(chunk_ids, rng.randint(1, 3) + 4)
            relevant = picks[: len(picks) - 4]
            case = {"id": case_id, "question": sentence(rng, 12)[:-1] + "?", "kind": kind}
            if kind == "qa":
                qa += 1
                case["expected_source_ids"] = relevant
                case["expected_answer"] = sentence(rng, 10)
            elif kind == "injection":
                case["adversarial_payload"] = "direct-override"
            ds.write(json.dumps(case) + "\n")

            line: dict = {"case_id": case_id}
            if not qa_only and rng.random() < 0.005:
                line["error"] = "upstream timed out"
                failures += 1
                out.write(json.dumps(line) + "\n")
                continue
            ranked = rng.choices(picks, k=RETRIEVED_PER_CASE)
            chunks = [
                {"id": cid, "text": chunk_text[cid], "score": 1.0 - j / 10}
                for j, cid in enumerate(ranked)
            ]
            if qa_only or rng.random() >= 0.02:
                line["retrieve"] = chunks
                retrieval_scored += kind == "qa"
            if kind == "unanswerable" and rng.random() < 0.7:
                line["answer"] = {"text": "I don't know: the documents do not say."}
            else:
                line["answer"] = {
                    "text": " ".join(sentence(rng, 9) for _ in range(2)),
                    "citations": ranked[:2],
                }
            out.write(json.dumps(line) + "\n")
    counts = {
        "cases": n,
        "qa_cases": qa,
        "failures": failures,
        "retrieval_scored": retrieval_scored,
    }
    stamp.write_text(json.dumps({"params": params, "counts": counts}), encoding="utf-8")
    _write_config(config, concurrency)
    return RecordedRun(dataset, outputs, config, **counts)


def _write_config(path: Path, concurrency: int) -> None:
    path.write_text(
        "[run]\n"
        "k = 5\n"
        f"concurrency = {concurrency}\n\n"
        "[adapter]\n"
        'target = "ragproof_core.adapters.recorded:RecordedAdapter"\n'
        'options = { path = "outputs.jsonl" }\n',
        encoding="utf-8",
    )
