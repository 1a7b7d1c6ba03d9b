"""Where ``ragproof run`` spends its time and its memory: a sampling profile.

    .venv/bin/python -m benchmarks.profile_run [--interval 0.02] -- run --dataset ... --config ...

Runs the command line in this process while a thread samples, every
``interval`` seconds, the resident set size and the main thread's stack. It
then prints, per innermost ragproof (or Dagster, DuckDB, pyarrow...) function,
the wall time spent there and the largest RSS seen there, and the stack at the
peak. Set RAGPROOF_STORE and DAGSTER_HOME as for the command itself. Used to
explain a missed end-to-end target; not part of ``run_all``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field

_PAGE = os.sysconf("SC_PAGE_SIZE")
_OURS = ("ragproof_core", "ragproof_assets")


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * _PAGE


def _where(frames: list[traceback.FrameSummary]) -> tuple[str, str]:
    """(innermost ragproof function, innermost function) of a stack."""
    ours = next((f for f in reversed(frames) if any(part in f.filename for part in _OURS)), None)
    inner = frames[-1] if frames else None

    def name(frame: traceback.FrameSummary | None) -> str:
        if frame is None:
            return "-"
        path = frame.filename
        for root in (*_OURS, "site-packages/", "lib/python"):
            if root in path:
                path = path[path.index(root) :].removeprefix("site-packages/")
                break
        return f"{path}:{frame.name}"

    return name(ours), name(inner)


@dataclass
class Sampler:
    interval: float
    samples: list[tuple[float, int, str, str]] = field(default_factory=list)
    peak_rss: int = 0
    peak_stack: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self, main_id: int) -> None:
        start = time.perf_counter()
        while not self._stop.wait(self.interval):
            rss = rss_bytes()
            frame = sys._current_frames().get(main_id)
            frames = traceback.extract_stack(frame) if frame is not None else []
            ours, inner = _where(frames)
            self.samples.append((time.perf_counter() - start, rss, ours, inner))
            if rss > self.peak_rss:
                self.peak_rss = rss
                self.peak_stack = [f"{f.filename}:{f.lineno} {f.name}" for f in frames]

    def stop(self) -> None:
        self._stop.set()


def report(sampler: Sampler, top: int = 25) -> str:
    by_ours: dict[str, list[int]] = defaultdict(list)
    by_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
    for _, rss, ours, inner in sampler.samples:
        by_ours[ours].append(rss)
        by_pair[(ours, inner)].append(rss)
    n = max(len(sampler.samples), 1)
    lines = [f"{n} samples every {sampler.interval:g} s; peak RSS {sampler.peak_rss / 1e6:,.0f} MB"]
    lines.append("\nby innermost ragproof function: share of samples, max RSS")
    for where, rss in sorted(by_ours.items(), key=lambda kv: -len(kv[1]))[:top]:
        lines.append(f"  {len(rss) / n:6.1%}  {max(rss) / 1e6:7,.0f} MB  {where}")
    lines.append("\nby (ragproof function, innermost function): share of samples, max RSS")
    for (ours, inner), rss in sorted(by_pair.items(), key=lambda kv: -len(kv[1]))[:top]:
        lines.append(f"  {len(rss) / n:6.1%}  {max(rss) / 1e6:7,.0f} MB  {ours}  <  {inner}")
    lines.append("\nstack at the peak:")
    lines.extend(f"  {line}" for line in sampler.peak_stack if "/threading.py" not in line)
    lines.append("\nRSS over time (MB, every ~2% of the run):")
    step = max(n // 50, 1)
    for t, rss, ours, _ in sampler.samples[::step]:
        lines.append(f"  {t:7.2f} s  {rss / 1e6:7,.0f} MB  {ours}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, _, cli_args = _split(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.02)
    args = parser.parse_args(own)

    from ragproof_cli import main as ragproof_main

    sampler = Sampler(args.interval)
    thread = threading.Thread(target=sampler.run, args=(threading.get_ident(),), daemon=True)
    thread.start()
    start = time.perf_counter()
    try:
        code = ragproof_main(cli_args)
    finally:
        sampler.stop()
        thread.join()
    print(f"\nragproof exited {code} after {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(report(sampler), file=sys.stderr)
    return code


def _split(argv: list[str]) -> tuple[list[str], str, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m benchmarks.profile_run [--interval S] -- run ...")
    i = argv.index("--")
    return argv[:i], "--", argv[i + 1 :]


if __name__ == "__main__":
    sys.exit(main())
