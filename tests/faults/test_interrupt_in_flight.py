"""A signal while requests are in flight (CONTRACT section 29), through the installed
command: after it no new adapter or judge request is sent, not even the next request of
a case already started, and those in flight get at most 10 s; the run is kept
``interrupted`` and its resume ends with the numbers of a run never stopped.

The services hang far longer than the allowance (ten minutes, with the adapter's own
timeout as long), so a command that waited for them would outlive the test's bound."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.faults.conftest import judge_env, plain_run_files
from tests.support.cli import cli_env, ragproof, ragproof_exec_popen
from tests.support.judge_server import JudgeServer, Reply
from tests.support.rag_service import RagService

CASES = 6
HANG_S = 600.0
INTERRUPTED = re.compile(
    r"ragproof: interrupted: run (\S+) kept (\d+) of (\d+) cases; "
    r"ragproof run --resume \1 continues it"
)
# Far past the 10 s allowance, far short of the services' hang.
EXIT_BOUND_S = 240


def wait_for(condition, what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def interrupted_line(err: str) -> tuple[str, int, int]:
    line = INTERRUPTED.fullmatch(err.strip().splitlines()[-1])
    assert line is not None, err
    return line.group(1), int(line.group(2)), int(line.group(3))


def stopped(args: list[str], env: dict, in_flight) -> tuple[int, str]:
    """The command started, SIGTERM once ``in_flight()``; its exit code and stderr."""
    proc = ragproof_exec_popen("run", *args, env=env)
    try:
        wait_for(in_flight, "the requests in flight")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=EXIT_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


@pytest.fixture
def service():
    with RagService() as running:
        yield running


def test_a_signal_cuts_the_adapter_calls_in_flight_and_sends_no_other(service, tmp_path):
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "question": f"question {i}", "expected_source_ids": ["x"]})
            + "\n"
            for i in range(CASES)
        )
    )
    config = tmp_path / "ragproof.toml"
    config.write_text(
        '[adapter]\ntarget = "ragproof_core.adapters.http:HttpAdapter"\n'
        f'options = {{ url = "{service.base}/answer", retrieve_url = "{service.base}/retrieve", '
        f"timeout_s = {HANG_S} }}\n"
        f"[run]\nconcurrency = 2\ntimeout_s = {HANG_S}\n"
    )
    args = ["--dataset", str(dataset), "--config", str(config)]
    released = threading.Event()
    # Every retrieve() hangs: two are in flight (the run's concurrency) at the signal.
    service.pause = lambda request: released.wait(HANG_S) if "retrieve" in request.path else None
    env = cli_env(RAGPROOF_STORE=str(tmp_path / "store"), DAGSTER_HOME=str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    try:
        code, err = stopped(args, env, lambda: len(service.requests) >= 2)
    finally:
        released.set()
    assert code == 143, err
    run_id, kept, total = interrupted_line(err)
    assert (kept, total) == (0, CASES)
    # The two retrieve() calls in flight were cut; no answer() followed them, no case began.
    assert Counter(r.path for r in service.requests) == {"/retrieve": 2}

    service.pause = None
    resumed = ragproof("run", "--resume", run_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    whole = ragproof("run", *args, "--json", env=env)
    assert whole.returncode == 0, whole.stderr
    assert json.loads(resumed.stdout)["metrics"] == json.loads(whole.stdout)["metrics"]


def test_a_signal_stops_the_judge_mid_case_and_cuts_its_requests_in_flight(tmp_path: Path):
    dataset, config = plain_run_files(tmp_path, CASES, concurrency=2)
    args = ["--dataset", str(dataset), "--config", str(config)]
    with JudgeServer() as judge:
        # Both of the first case's questions in flight at the signal (the judge takes two
        # at a time): one answers within the allowance, the other never would. Every other
        # case's questions wait for a slot, and must never be sent.
        judge.script(Reply(delay_s=9.0), Reply.hang(HANG_S))
        env = cli_env(
            **judge_env(judge.url),
            RAGPROOF_STORE=str(tmp_path / "store"),
            DAGSTER_HOME=str(tmp_path / "home"),
        )
        (tmp_path / "home").mkdir()
        code, err = stopped(args, env, lambda: judge.request_count >= 2)
        assert code == 143, err
        run_id, kept, total = interrupted_line(err)
        assert (kept, total) == (0, CASES)
        assert judge.request_count == 2

        resumed = ragproof("run", "--resume", run_id, "--json", env=env)
        assert resumed.returncode == 0, resumed.stderr
        whole = ragproof("run", *args, "--json", env=env)
        assert whole.returncode == 0, whole.stderr
    assert json.loads(resumed.stdout)["metrics"] == json.loads(whole.stdout)["metrics"]
