"""Judge failures named beside a run's status (CONTRACT section 24): the summary's last
line, the report's run object and the results browser's run page read one function."""

from __future__ import annotations

from ragproof_core.present.app_data import run_data
from ragproof_core.present.judge_activity import judge_failures_line
from ragproof_core.present.report_data import record_dict
from tests.core.present.test_run_list import _record

REASON = "judge transport failed: NotFoundError (HTTP 404): model gpt-x [not retryable]"
FAILED = _record(
    "20261201T101500Z-cccccc",
    {"k": 5},
    judge_model="openai/gpt-x",
    judge_requests=20,
    judge_errors=3,
    judge_first_error=REASON,
)
STOPPED = _record(
    "20261201T101500Z-dddddd",
    {"k": 5},
    status="aborted:judge",
    judge_model="openai/gpt-x",
    judge_requests=5,
    judge_errors=5,
    judge_first_error="openai/gpt-x: AuthenticationError (HTTP 401): invalid key",
)
CLEAN = _record("20261201T101500Z-eeeeee", {"k": 5}, judge_model="openai/gpt-x")


def test_the_line_names_the_errors_and_the_first_reason() -> None:
    assert judge_failures_line(FAILED) == f"judge: 3 of 20 requests failed (first: {REASON})"
    assert judge_failures_line(STOPPED) == (
        "judge unavailable: openai/gpt-x: AuthenticationError (HTTP 401): invalid key"
    )
    assert judge_failures_line(CLEAN) is None


class _Store:
    """What ``run_data`` reads of a store for one run."""

    def summaries(self, run_id: str) -> list:
        return []

    def probes(self, run_id: str) -> list:
        return []


def test_the_report_and_the_browser_carry_it_beside_the_status() -> None:
    assert record_dict(FAILED)["judge_failures"] == judge_failures_line(FAILED)
    assert record_dict(CLEAN)["judge_failures"] is None
    page = run_data(_Store(), STOPPED, [STOPPED])["run"]
    assert (page["status"], page["judge_failures"]) == (
        "aborted:judge",
        judge_failures_line(STOPPED),
    )
