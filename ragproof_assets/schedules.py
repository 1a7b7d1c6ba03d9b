"""Nightly evaluation of the suites listed in a config file.

The schedule is defined stopped: turn it on in the UI (Automation -> nightly_suites)
or with `dagster schedule start nightly_suites -w workspace.yaml` while
`dagster dev` (or the daemon) runs.
"""

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from ragproof_assets.jobs import evaluate_job
from ragproof_assets.partitions import evaluation_runs
from ragproof_core.store.layout import new_run_id

DEFAULT_SUITES_FILE = Path("data/suites.toml")


@dataclass(frozen=True)
class Suite:
    name: str
    dataset: str
    config_file: str | None = None
    adapter: str | None = None
    k: int | None = None
    source_match: str | None = None


def load_suites(path: Path) -> list[Suite]:
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    suites = []
    for n, entry in enumerate(raw.get("suite", []), start=1):
        if "name" not in entry or "dataset" not in entry:
            raise ValueError(f"{path}: suite #{n} needs a name and a dataset")
        suites.append(Suite(**entry))
    return suites


def suite_run_config(suite: Suite) -> dict:
    fields = {
        "dataset": suite.dataset,
        "config_file": suite.config_file,
        "adapter": suite.adapter,
        "k": suite.k,
        "source_match": suite.source_match,
    }
    return {"ops": {"eval_dataset": {"config": {k: v for k, v in fields.items() if v is not None}}}}


@dg.schedule(
    job=evaluate_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Every night at 02:00 UTC, evaluate each suite of data/suites.toml "
    "(or $RAGPROOF_SUITES) as a new run.",
)
def nightly_suites(context: dg.ScheduleEvaluationContext):
    path = Path(os.environ.get("RAGPROOF_SUITES") or DEFAULT_SUITES_FILE)
    if not path.exists():
        return dg.SkipReason(f"no suites file at {path}")
    suites = load_suites(path)
    if not suites:
        return dg.SkipReason(f"{path} lists no suite")
    run_ids = {suite.name: new_run_id() for suite in suites}
    # Schedules cannot request dynamic partitions the way sensors can, so the
    # partitions are added before the run requests that name them.
    context.instance.add_dynamic_partitions(evaluation_runs.name, list(run_ids.values()))
    return [
        dg.RunRequest(
            run_key=run_ids[suite.name],
            partition_key=run_ids[suite.name],
            run_config=suite_run_config(suite),
            tags={"ragproof/suite": suite.name},
        )
        for suite in suites
    ]
