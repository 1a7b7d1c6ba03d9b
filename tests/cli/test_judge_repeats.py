"""`ragproof run --judge-repeats M` (CONTRACT section 27) against the local judge server
answering differently per repeat: M requests per request, the mean of the repeats'
scores, every reply kept, a cached re-run sending nothing, and judge_self_agreement
equal to the `krippendorff` package's alpha over the stored repeats."""

from __future__ import annotations

import json
import threading
import zlib
from collections import Counter
from pathlib import Path

import duckdb
import krippendorff
import numpy as np
import pytest

from tests.assets.expected import RUN_ARGS
from tests.support.cli import ragproof
from tests.support.judge_server import ReceivedRequest, default_reply

pytestmark = pytest.mark.slow

REPEATS = 3
METRIC = "generation.answer_relevance"
# The n-th request of a question whose text hashes odd gets these verdicts in turn;
# the others are always relevant.
CYCLE = ("relevant", "partial", "irrelevant")


class VaryingReplies:
    """The server's fallback: each question's n-th request answered by ``CYCLE``."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: ReceivedRequest) -> str:
        if request.prompt != "answer_relevance":
            return json.dumps(default_reply(request.prompt, request.blocks()))
        with self.lock:
            self.seen[request.user] += 1
            n = self.seen[request.user]
        varies = zlib.crc32(request.user.encode()) % 2 == 1
        verdict = CYCLE[(n - 1) % len(CYCLE)] if varies else "relevant"
        return json.dumps({"verdict": verdict})


def _run(env, *extra: str) -> dict:
    done = ragproof(
        *RUN_ARGS, "--metrics", METRIC, "--judge-repeats", str(REPEATS), "--json", *extra, env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_judge_repeats_ask_m_times_keep_every_reply_and_measure_self_agreement(
    server, judge_env, store_path: Path
):
    replies = VaryingReplies()
    server.fallback = replies
    dry = ragproof(
        *RUN_ARGS,
        "--metrics",
        METRIC,
        "--judge-repeats",
        str(REPEATS),
        "--dry-run",
        "--json",
        env=judge_env,
    )
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)["requests"]
    assert server.request_count == 0

    out = _run(judge_env)
    asked = server.request_count
    questions = sum(replies.seen.values()) // REPEATS
    assert questions > 0 and asked == questions * REPEATS == planned
    assert set(replies.seen.values()) == {REPEATS}  # every question asked M times

    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT value, judge_raw_json FROM case_results WHERE run_id = ? AND metric = ? "
            "AND status = 'scored' ORDER BY case_id",
            [out["run_id"], METRIC],
        ).fetchall()
    units = []
    for value, raw in rows:
        stored = json.loads(raw)
        assert len(stored["repeats"]) == REPEATS  # every reply kept
        scores = stored["scores"]
        assert value == pytest.approx(np.mean(scores))  # the mean of the repeats
        units.append(scores)
    assert len(units) == questions
    assert any(len(set(u)) > 1 for u in units)  # the judge disagreed with itself somewhere
    expected = krippendorff.alpha(
        reliability_data=np.array(units, dtype=float).T, level_of_measurement="interval"
    )
    stats = out["metrics"][METRIC]
    assert stats["judge_self_agreement"] == pytest.approx(expected, abs=1e-12)
    assert stats["judge_repeated"] == questions
    assert stats["mean"] == pytest.approx(np.mean([np.mean(u) for u in units]))

    # A cached re-run sends nothing and finds the same.
    again = _run(judge_env)
    assert server.request_count == asked
    assert again["metrics"][METRIC] == stats


def test_judge_repeats_whose_replies_never_vary_have_no_self_agreement(server, judge_env):
    server.fallback = lambda request: json.dumps(default_reply(request.prompt, request.blocks()))
    out = _run(judge_env, "--no-cache")
    stats = out["metrics"][METRIC]
    assert stats["judge_self_agreement"] is None
    assert stats["judge_repeated"] > 0
