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


def test_trials_with_the_same_answer_share_the_judges_reply_per_repeat_index(
    server, judge_env, store_path: Path, tmp_path: Path
):
    # Three trials a case answering "answer 1", "answer 2", "answer 1": the 3rd trial's
    # judge requests are the 1st's, repeat index by repeat index (CONTRACT section 27).
    server.fallback = VaryingReplies()  # a text's 1st request relevant, 2nd partial, ...
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "question": f"question {i}?"}) + "\n" for i in (0, 1)),
        encoding="utf-8",
    )
    config = tmp_path / "ragproof.toml"
    config.write_text(
        '[run]\nrepeats = 3\n\n[adapter]\ntarget = "tests.support.counting_adapter:'
        'CountingAdapter"\noptions = { cycle = 2 }\n',
        encoding="utf-8",
    )
    done = ragproof(
        "run",
        "--dataset",
        str(tmp_path / "cases.jsonl"),
        "--config",
        str(config),
        "--metrics",
        METRIC,
        "--judge-repeats",
        "2",
        "--json",
        env=judge_env,
    )
    assert done.returncode == 0, done.stderr
    # Two cases x two distinct answers x two repeats.
    assert server.request_count == 8
    with duckdb.connect(str(store_path / "ragproof.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, trial, judge_raw_json FROM case_results WHERE run_id = ? "
            "AND metric = ? ORDER BY case_id, trial",
            [json.loads(done.stdout)["run_id"], METRIC],
        ).fetchall()
    stored = {(case, trial): json.loads(raw) for case, trial, raw in rows}
    for case in ("q0", "q1"):
        # Each answer's two repeats asked apart (at once: either may be first), one
        # relevant, one partial.
        assert sorted(stored[case, 1]["scores"]) == sorted(stored[case, 2]["scores"])
        assert sorted(stored[case, 1]["scores"]) == [0.5, 1.0]
        # The 3rd trial asked nothing and has the 1st's reply at each repeat index: had
        # it asked, its repeats would have been the text's 3rd and 4th requests
        # (irrelevant and relevant).
        assert stored[case, 3] == stored[case, 1]
