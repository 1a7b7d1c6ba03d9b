"""Benchmark 9: ``ragproof import otlp`` on 1,000,000 spans (100,000 traces).

Generates OTLP/JSON files as the OpenTelemetry SDK's file exporter writes them (one
``{"resourceSpans": [...]}`` document a line, 512 spans a document, spans in the order
they end, so a trace's root comes after its children and traces interleave), with
OpenInference attributes: per trace a root ``CHAIN`` span (question, answer, a session
on every tenth trace), a ``RETRIEVER`` span with three documents of about 120
characters, two ``LLM`` spans with token counts, a ``TOOL`` span and five inner
``CHAIN`` spans: 10 spans a trace, spread over 10 files. Then runs the real command
in a child process (``benchmarks._measure``: wall, CPU, peak RSS of the command
alone), at ``--sample 1`` and ``--sample 0.1``.

``python -m benchmarks.otlp_import [--quick]``.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchmarks._common import (
    RAGPROOF,
    REPO,
    WORK,
    Benchmark,
    Table,
    clean_env,
    count,
    parse_args,
    publish,
    run_measured,
    seconds,
    verdict,
)

BENCHMARK = Benchmark(
    title="Importing production traces",
    measures=(
        "`ragproof import otlp` (the real command in a child process) on 1,000,000 spans "
        "of 100,000 traces (10 spans a trace: root, retriever with three documents, two "
        "LLM, tool, five chains; every tenth trace in a session) in 10 OTLP/JSON files as "
        "the SDK's file exporter writes them (512 spans a line, traces interleaved, roots "
        "after their children), at `--sample 1` and `0.1`: wall, CPU, peak RSS. `--quick` "
        "is 2,000 traces."
    ),
    target="< 60 s and < 1.5 GB at 1,000,000 spans",
    order=90,
)

FULL_TRACES = 100_000
QUICK_TRACES = 2_000
SPANS_PER_TRACE = 10
FILES = 10
BATCH = 512  # the SDK's BatchSpanProcessor default max_export_batch_size
TARGET_WALL_S = 60.0
TARGET_RSS_MB = 1500.0
T0_NS = 1_767_225_600_000_000_000


def _text(value: str) -> dict:
    return {"stringValue": value}


def _kv(key: str, value: dict) -> dict:
    return {"key": key, "value": value}


def _trace_spans(n: int, rng: random.Random) -> list[dict]:
    """One trace's spans in the order they end (children first, the root last)."""
    trace = f"{n:032x}"
    root = f"{n:08x}00000000"
    start = T0_NS + n * 10_000_000

    def span(k: int, kind: str, offset_ms: int, length_ms: int, attributes: list) -> dict:
        return {
            "traceId": trace,
            "spanId": f"{n:08x}{k:08x}",
            "parentSpanId": root,
            "name": kind.lower(),
            "kind": 1,
            "startTimeUnixNano": str(start + offset_ms * 1_000_000),
            "endTimeUnixNano": str(start + (offset_ms + length_ms) * 1_000_000),
            "attributes": [_kv("openinference.span.kind", _text(kind)), *attributes],
            "status": {},
        }

    docs = []
    for d in range(3):
        doc = rng.randrange(50_000)
        docs += [
            _kv(f"retrieval.documents.{d}.document.id", _text(f"doc-{doc}")),
            _kv(
                f"retrieval.documents.{d}.document.content",
                _text(f"Passage {doc}: " + "words of a retrieved passage " * 4),
            ),
            _kv(f"retrieval.documents.{d}.document.score", {"doubleValue": 0.9 - d * 0.1}),
        ]
    spans = [
        span(2, "RETRIEVER", 5, 40, [_kv("input.value", _text(f"query {n}")), *docs]),
        span(
            3, "TOOL", 50, 30, [_kv("tool.name", _text("lookup")), _kv("input.value", _text("{}"))]
        ),
        *(span(4 + k, "CHAIN", 90 + k, 1, [_kv("input.value", _text("x"))]) for k in range(5)),
        span(
            9,
            "LLM",
            100,
            300,
            [
                _kv("llm.token_count.prompt", {"intValue": "812"}),
                _kv("llm.token_count.completion", {"intValue": "64"}),
            ],
        ),
        span(
            10,
            "LLM",
            400,
            200,
            [
                _kv("llm.token_count.prompt", {"intValue": "300"}),
                _kv("llm.token_count.completion", {"intValue": "20"}),
            ],
        ),
    ]
    root_attributes = [
        _kv("openinference.span.kind", _text("CHAIN")),
        _kv("input.value", _text(f"What does passage {n} say about the refund window?")),
        _kv("output.value", _text(f"Answer {n}: within 30 days [doc-{n % 50_000}].")),
    ]
    if n % 10 == 0:
        root_attributes.append(_kv("session.id", _text(f"session-{n // 100}")))
    spans.append(
        {
            "traceId": trace,
            "spanId": root,
            "name": "rag",
            "kind": 1,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 650_000_000),
            "attributes": root_attributes,
            "status": {},
        }
    )
    return spans


def _ended(traces: int, seed: int) -> Iterator[dict]:
    """Spans of ``traces`` traces, interleaved: eight traces in flight at a time."""
    rng = random.Random(seed)
    in_flight: list[list[dict]] = []
    n = 0
    while n < traces or in_flight:
        while n < traces and len(in_flight) < 8:
            in_flight.append(_trace_spans(n, rng))
            n += 1
        pick = rng.randrange(len(in_flight))
        yield in_flight[pick].pop(0)
        if not in_flight[pick]:
            in_flight.pop(pick)


def write_trace_files(folder: Path, traces: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"spans-{i:02d}.jsonl" for i in range(FILES)]
    handles = [path.open("w", encoding="utf-8") for path in paths]
    batch: list[dict] = []
    written = 0
    try:
        for span in _ended(traces, seed=23):
            batch.append(span)
            if len(batch) == BATCH:
                _flush(handles[written % FILES], batch)
                written += 1
                batch = []
        if batch:
            _flush(handles[written % FILES], batch)
    finally:
        for handle in handles:
            handle.close()
    return paths


def _flush(handle, spans: list[dict]) -> None:
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", _text("rag"))]},
                "scopeSpans": [{"scope": {"name": "openinference"}, "spans": spans}],
            }
        ]
    }
    handle.write(json.dumps(document, separators=(",", ":")) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    traces = QUICK_TRACES if args.quick else FULL_TRACES
    WORK.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="otlp-import-", dir=WORK))
    try:
        paths = write_trace_files(scratch / "traces", traces)
        size_mb = sum(path.stat().st_size for path in paths) / 1e6
        rows = []
        for rate in ("1", "0.1"):
            run = run_measured(
                [
                    RAGPROOF,
                    "import",
                    "otlp",
                    *map(str, paths),
                    "--out",
                    str(scratch / f"cases-{rate}.jsonl"),
                    "--recorded-out",
                    str(scratch / f"outputs-{rate}.jsonl"),
                    "--sample",
                    rate,
                ],
                clean_env(),
                REPO,
                timeout=1800,
            )
            if run.returncode != 0:
                raise RuntimeError(run.stderr)
            cases = sum(1 for _ in (scratch / f"cases-{rate}.jsonl").open(encoding="utf-8"))
            rows.append(
                [
                    count(traces * SPANS_PER_TRACE),
                    count(traces),
                    f"{size_mb:,.0f} MB in {FILES} files",
                    rate,
                    count(cases),
                    seconds(run.wall_s),
                    seconds(run.cpu_s),
                    f"{run.max_rss_mib:,.0f} MiB",
                    verdict(
                        run.wall_s < TARGET_WALL_S and run.max_rss_mib * 1.048576 < TARGET_RSS_MB
                    )
                    if not args.quick
                    else "(quick)",
                ]
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    table = Table(
        "`ragproof import otlp`: OTLP/JSON spans into cases and recordings",
        [
            "spans",
            "traces",
            "input",
            "--sample",
            "cases written",
            "wall",
            "CPU",
            "peak RSS",
            "target (< 60 s, < 1.5 GB)",
        ],
        rows,
        [
            "The real command in a child process; cases are traces, a session of 10 traces one "
            "conversation (every tenth trace carries a session id).",
        ],
    )
    publish([table], args.emit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
