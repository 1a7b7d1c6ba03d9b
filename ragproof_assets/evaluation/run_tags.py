"""The Dagster run tags that tie ragproof's runs together in the UI.

An evaluation run also carries its identity: its own tags, ``ragproof/name`` and
``ragproof/config_digest`` (``identity_tags``).

A UI launch (``launch_evaluation``) and the ``evaluate`` run it starts both
carry ``ragproof/run_id`` (the evaluation run, = partition), so clicking that
tag on either lists both; the ``evaluate`` run names its launcher in
``ragproof/launched_by`` and the launcher gets ``ragproof/evaluate_run`` back
once the evaluation starts. A suite's runs carry ``ragproof/suite``.
"""

from __future__ import annotations

import dagster as dg

from ragproof_core.config import RunManifest

SOURCE_TAG = "ragproof/source"
RUN_ID_TAG = "ragproof/run_id"
LAUNCHED_BY_TAG = "ragproof/launched_by"
EVALUATE_RUN_TAG = "ragproof/evaluate_run"
# The suite (suites.toml, or an EvaluationSuite in a team's own project) a run evaluates.
SUITE_TAG = "ragproof/suite"
# The run's identity (CONTRACT section 25); its own tags go on as they are (their keys
# cannot start with ragproof/ or dagster/: config/identity.py).
NAME_TAG = "ragproof/name"
CONFIG_DIGEST_TAG = "ragproof/config_digest"


def identity_tags(manifest: RunManifest) -> dict[str, str]:
    """The Dagster run tags of an evaluation run's identity: its tags, name and digest."""
    tags = {**manifest.run.tags, CONFIG_DIGEST_TAG: manifest.config_digest}
    if manifest.run.name is not None:
        tags[NAME_TAG] = manifest.run.name
    return tags


def tag_launcher(context: dg.AssetExecutionContext) -> None:
    """Name this ``evaluate`` run on the launch run that started it, if any."""
    launcher = context.run.tags.get(LAUNCHED_BY_TAG)
    if launcher and context.instance.get_run_by_id(launcher) is not None:
        context.instance.add_run_tags(launcher, {EVALUATE_RUN_TAG: context.run.run_id})
