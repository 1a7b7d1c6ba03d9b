"""The Dagster code location: `dagster dev -w workspace.yaml` or `dg dev` serve it."""

import dagster as dg

from ragproof_assets.evaluation.assets import eval_dataset
from ragproof_assets.evaluation.executors import executor_from_env
from ragproof_assets.evaluation.io_managers import JudgeLedgerIOManager, TableIOManager
from ragproof_assets.evaluation.jobs import evaluate_job
from ragproof_assets.evaluation.resources import CheckSettings, JudgeResource, StoreResource
from ragproof_assets.evaluation.shards import evaluation_assets
from ragproof_assets.launch.ui import launch_evaluation_job, launch_evaluation_sensor
from ragproof_assets.schedules.nightly import nightly_suites
from ragproof_assets.traces import trace_sensor

store = StoreResource()

defs = dg.Definitions(
    assets=[eval_dataset, evaluation_assets],
    jobs=[evaluate_job, launch_evaluation_job],
    schedules=[nightly_suites],
    sensors=[launch_evaluation_sensor, trace_sensor],
    resources={
        "store": store,
        "judge_resource": JudgeResource(store=store),
        "judge_ledger_io_manager": JudgeLedgerIOManager(store=store),
        "table_io_manager": TableIOManager(store=store),
        "checks": CheckSettings(),
    },
    # None keeps Dagster's default (multiprocess); RAGPROOF_EXECUTOR=k8s or celery in a deployment.
    executor=executor_from_env(),
)
