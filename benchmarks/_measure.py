"""Run one command and report its wall time, CPU time and peak resident memory.

``python -m benchmarks._measure STATS.json -- cmd ...``: stdout and stderr pass
through; the stats are written as JSON after the command exits. This process
has exactly one child, so ``RUSAGE_CHILDREN`` is that command's own peak
(ru_maxrss of the largest child waited for), not the largest of a whole session's.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    stats_path, separator, *cmd = argv
    if separator != "--" or not cmd:
        raise SystemExit("usage: python -m benchmarks._measure STATS.json -- cmd ...")
    start = time.perf_counter()
    returncode = subprocess.call(cmd)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = {
        "returncode": returncode,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_mib": usage.ru_maxrss / 1024,  # KiB on Linux
    }
    with open(stats_path, "w", encoding="utf-8") as out:
        json.dump(stats, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
