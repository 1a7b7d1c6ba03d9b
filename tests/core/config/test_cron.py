"""The cron strings a suite may set: the same verdict as Dagster's schedules, decided
without importing Dagster (``ragproof suites check`` runs without it)."""

from __future__ import annotations

import dagster as dg
import pytest

from ragproof_core.config.cron import is_valid_cron

CRONS = [
    "0 2 * * *",
    "*/15 * * * *",
    "0 2 * * MON-FRI",
    "0 2 * * mon",
    "0 2 1 JAN *",
    "0 2 * jan-mar *",
    "0 2 * * 7",
    "0 2 * * 0-7",
    "0 2 * * sun-sat",
    "0-59/5 1,2,3 * * *",
    "5/10 * * * *",
    "1-5/2 * * * *",
    "0 2 * * */2",
    "0 2 ? * *",
    "0 2 L * *",
    "0 2 * * 1#2",
    "0 0 29 2 *",
    "  0 2 * * *",
    "0  2 * * *",
    "@daily",
    "@hourly",
    "@weekly",
    "@monthly",
    "@yearly",
    "@annually",
    "@midnight",
    # Not schedules:
    "@reboot",
    "0 2 * * 8",
    "60 * * * *",
    "0 24 * * *",
    "0 0 0 * *",
    "0 0 31 2 *",
    "0 0 30 feb *",
    "* * * * * *",
    "* * * *",
    "",
    "0 2 * * 5L",
    "H * * * *",
    "*/0 * * * *",
    "0 2 * * 1,",
    "0 2 15W * *",
    "0 2 * 13 *",
    "every day",
]


def dagster_takes(cron: str) -> bool:
    try:
        dg.ScheduleDefinition(name="s", cron_schedule=cron, job_name="j")
    except dg.DagsterInvalidDefinitionError:
        return False
    return True


@pytest.mark.parametrize("cron", CRONS)
def test_the_verdict_is_dagsters(cron):
    assert is_valid_cron(cron) == dagster_takes(cron)


def test_both_kinds_are_covered():
    verdicts = [is_valid_cron(cron) for cron in CRONS]
    assert verdicts.count(True) >= 20 and verdicts.count(False) >= 15
