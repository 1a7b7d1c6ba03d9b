"""A schedule per suite of ``suites.toml`` (``$RAGPROOF_SUITES``, default
``data/suites.toml``; ``ragproof_core/config/suites.py`` reads it).

Each suite gets the schedule ``ragproof_<name>``, a new run of ragproof's own
``evaluate`` job each tick: running by default when the suite sets ``cron`` (in
``timezone``, default UTC), stopped until turned on (at 02:00 UTC) when it does
not: in the UI (Automation -> ragproof_<name>) or with
``dagster schedule start ragproof_<name> -w workspace.yaml``.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from ragproof_assets.evaluation.config import EvalRunConfig
from ragproof_assets.evaluation.factory import Evaluation
from ragproof_assets.evaluation.run_tags import SUITE_TAG
from ragproof_assets.schedules.automation import scheduled_evaluation
from ragproof_core.config import Suite


def schedule_name(suite: str) -> str:
    return f"ragproof_{suite}"


def suite_schedule(suite: Suite, evaluation: Evaluation) -> dg.ScheduleDefinition:
    when = f"{suite.schedule_cron} ({suite.timezone})"
    return scheduled_evaluation(
        schedule_name(suite.name),
        evaluation,
        EvalRunConfig(**suite.launch),
        cron=suite.schedule_cron,
        timezone=suite.timezone,
        running=suite.scheduled,
        tags={SUITE_TAG: suite.name},
        description=f"Evaluates suite {suite.name} ({suite.launch['dataset']}) as a new run "
        + (f"on {when}." if suite.scheduled else f"at {when} once turned on."),
    )


def suite_schedules(suites: Sequence[Suite], evaluation: Evaluation) -> list[dg.ScheduleDefinition]:
    return [suite_schedule(suite, evaluation) for suite in suites]
