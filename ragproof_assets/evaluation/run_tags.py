"""The Dagster run tags that tie ragproof's runs together in the UI.

A UI launch (``launch_evaluation``) and the ``evaluate`` run it starts both
carry ``ragproof/run_id`` (the evaluation run, = partition), so clicking that
tag on either lists both; the ``evaluate`` run names its launcher in
``ragproof/launched_by`` and the launcher gets ``ragproof/evaluate_run`` back
once the evaluation starts. A suite's runs carry ``ragproof/suite``.
"""

from __future__ import annotations

import dagster as dg

SOURCE_TAG = "ragproof/source"
RUN_ID_TAG = "ragproof/run_id"
LAUNCHED_BY_TAG = "ragproof/launched_by"
EVALUATE_RUN_TAG = "ragproof/evaluate_run"
# The suite (suites.toml, or an EvaluationSuite in a team's own project) a run evaluates.
SUITE_TAG = "ragproof/suite"


def tag_launcher(context: dg.AssetExecutionContext) -> None:
    """Name this ``evaluate`` run on the launch run that started it, if any."""
    launcher = context.run.tags.get(LAUNCHED_BY_TAG)
    if launcher and context.instance.get_run_by_id(launcher) is not None:
        context.instance.add_run_tags(launcher, {EVALUATE_RUN_TAG: context.run.run_id})
