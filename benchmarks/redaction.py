"""Redaction in linear time (issue 39, item 4): ``config.redaction.redact_text``, which every
stored config string, manifest and error message goes through.

Four texts at each size: a run of letters with no ``://`` (the trace status message that
made a run take a minute), the run after a URL (so the pattern searches it), the run
ending in ``://x`` (one URL whose scheme is the whole run), and prose with a URL holding
a password and a query every 200 characters. Each figure is the best of ``REPEAT``
calls' CPU seconds, and seconds per MB beside it: linear time keeps that flat as the
size grows. The pattern before the fix is timed on the run of letters after a URL at
small sizes only (it is quadratic: hours at 1 MB).

``python -m benchmarks.redaction [--quick]``
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from benchmarks._common import Benchmark, Table, parse_args, publish, verdict
from ragproof_core.config.redaction import redact_text, redact_url

BENCHMARK = Benchmark(
    title="Redaction in linear time",
    measures=(
        "`redact_text` (config/redaction.py) on 0.2, 1 and 4 MB: a run of letters without "
        "`://`, the run after a URL, the run ending in `://x`, and prose with a URL every "
        "200 characters; best of 3 calls' CPU seconds; the pattern before issue 39 on small "
        "runs of letters after a URL."
    ),
    target="1 MB of letters after a URL under 1 s; seconds per MB within 2x from 0.2 to 4 MB",
    order=195,
)

REPEAT = 3
# The pattern before issue 39: every letter of a run tried as a scheme's start.
_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")


def redact_before(text: str) -> str:
    return _BEFORE.sub(lambda match: redact_url(match.group()), text)


def texts(size: int) -> dict[str, str]:
    prose = "see https://user:hunter2@example.test/a?token=abc&v=2 for more, then "
    prose_run = (prose + "x" * (200 - len(prose))) * (size // 200 + 1)
    return {
        "letters, no ://": "a" * size,
        "a URL, then letters": "http://h/ " + "a" * (size - 9),
        "letters then ://x": "a" * (size - 4) + "://x",
        "prose, a URL every 200 chars": prose_run[:size],
    }


def best_cpu_s(function: Callable[[str], str], text: str) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        start = time.process_time()
        function(text)
        best = min(best, time.process_time() - start)
    return best


def main(argv=None) -> None:
    args = parse_args(BENCHMARK.title, argv)
    sizes = (20_000, 100_000) if args.quick else (200_000, 1_000_000, 4_000_000)
    before_sizes = (2_000, 4_000) if args.quick else (10_000, 20_000, 40_000)
    rows, per_mb = [], {}
    for size in sizes:
        for name, text in texts(size).items():
            cpu = best_cpu_s(redact_text, text)
            per_mb.setdefault(name, []).append(cpu / (size / 1e6))
            rows.append([name, f"{size / 1e6:g} MB", f"{cpu:.3f} s", f"{cpu / (size / 1e6):.3f} s"])
    flat = all(max(v) <= 2 * max(min(v), 1e-3) for v in per_mb.values())
    one_mb = [float(r[2][:-2]) for r in rows if r[1] == "1 MB" and r[0] == "a URL, then letters"]
    fast = not one_mb or one_mb[0] < 1.0
    before_rows = []
    for size in before_sizes:
        text = "http://h/ " + "a" * size
        before_rows.append(
            [
                f"{size / 1e3:g} KB",
                f"{best_cpu_s(redact_before, text):.3f} s",
                f"{best_cpu_s(redact_text, text):.5f} s",
            ]
        )
    largest = sizes[-1] / 1e6
    tables = [
        Table(
            f"Redaction: `redact_text` CPU seconds (best of {REPEAT})",
            ["text", "size", "CPU", "CPU per MB"],
            rows,
            ["linear: the CPU per MB stays flat as the text grows"],
        ),
        Table(
            "Redaction: targets",
            ["target", "verdict"],
            [
                ["1 MB of letters after a URL under 1 s CPU", verdict(fast)],
                [f"CPU per MB within 2x from the smallest size to {largest:g} MB", verdict(flat)],
            ],
        ),
        Table(
            "Redaction: a run of letters after a URL, the pattern before issue 39 and now",
            ["size", "before (quadratic)", "now"],
            before_rows,
            ["doubling the text multiplies the time before by about 4: 1 MB took hours"],
        ),
    ]
    headline = (
        f"1 MB of letters after a URL redacted in {one_mb[0]:.3f} s CPU (was hours)"
        if one_mb
        else ""
    )
    publish(tables, args.emit, headline=headline)


if __name__ == "__main__":
    main()
