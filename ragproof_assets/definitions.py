"""The Dagster code location: `dagster dev -w workspace.yaml` or `dg dev` serve it.

``defs`` is the evaluation (the asset factory at its defaults), the UI's launch
path and the trace sensor: what `ragproof run` drives. ``location`` is what
Dagster loads: ``defs`` and a schedule per suite of ``suites.toml``, read as the
location loads, so a mistake in that file fails the load with one line naming
the file, the suite and the key, and never stops a `ragproof run`.
"""

import os

import dagster as dg

from ragproof_assets.evaluation.executors import executor_from_env
from ragproof_assets.evaluation.factory import evaluation_resources
from ragproof_assets.evaluation.jobs import own_evaluation
from ragproof_assets.launch.ui import launch_evaluation_job, launch_evaluation_sensor
from ragproof_assets.schedules.retention import keep_last_sensors
from ragproof_assets.schedules.suites import suite_schedules
from ragproof_assets.traces import trace_sensor
from ragproof_core.config import SUITES_ENV, load_suites, suites_file

defs = dg.Definitions(
    assets=own_evaluation.assets,
    jobs=[own_evaluation.job, launch_evaluation_job],
    sensors=[launch_evaluation_sensor, trace_sensor],
    resources=evaluation_resources(own_evaluation.shape),
    # None keeps Dagster's default (multiprocess); RAGPROOF_EXECUTOR=k8s or celery in a deployment.
    executor=executor_from_env(),
)


@dg.definitions
def location() -> dg.Definitions:
    """``defs`` with a schedule per suite of ``$RAGPROOF_SUITES`` (default
    ``data/suites.toml``; none when that default file does not exist), and the sensors
    applying the suites' ``keep_last`` after their runs."""
    path = suites_file()
    suites = load_suites(path) if path.exists() or os.environ.get(SUITES_ENV) else []
    return dg.Definitions.merge(
        defs,
        dg.Definitions(
            schedules=suite_schedules(suites, own_evaluation),
            sensors=keep_last_sensors(suites, own_evaluation),
        ),
    )
