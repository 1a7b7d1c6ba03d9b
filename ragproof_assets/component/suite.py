"""``ragproof_assets.EvaluationSuite``: a ragproof evaluation in a team's own Dagster
project (CONTRACT section 30), the way dbt or Sling join one.

A ``defs.yaml`` of this type becomes the asset factory's assets under
``ragproof/<name>/`` (``eval_dataset`` depending on the project's own ``deps``),
their job, resources keyed for this suite alone, blocking checks, and its
automation: a sensor running by default for ``on_deps``, a schedule running by
default for a cron string. Everything a ``defs.yaml`` says is checked when the
project loads, each mistake one line naming the file and the attribute.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import dagster as dg
from pydantic import Field

from ragproof_assets.component.scaffold import EvaluationSuiteScaffolder
from ragproof_assets.evaluation.config import EvalRunConfig
from ragproof_assets.evaluation.factory import (
    Evaluation,
    build_evaluation,
    evaluation_resources,
)
from ragproof_assets.evaluation.resources import CheckSettings, StoreResource
from ragproof_assets.evaluation.run_tags import SUITE_TAG
from ragproof_assets.evaluation.shape import EvaluationShape, ResourceKeys
from ragproof_assets.schedules.automation import evaluation_on_deps, scheduled_evaluation
from ragproof_core.config import ConfigError, resolve_launch
from ragproof_core.config.cron import is_valid_cron
from ragproof_core.config.suites import NAME_RULE, SUITE_NAME, suite_identity
from ragproof_core.errors import show_value

KEY_ROOT = "ragproof"
ON_DEPS, NONE = "on_deps", "none"
DEFS_FILE = "defs.yaml"


def _described(text: str) -> dg.Resolver:
    """An attribute's description in the defs.yaml schema (`dg docs`, `dg utils
    inspect-component`): Dagster's derived model drops a defaulted field's own
    ``Field(description=...)``, it keeps its resolver's."""
    return dg.Resolver.default(description=text)


@dataclass(frozen=True)
class SuitePlan:
    """A suite as its ``defs.yaml`` says it, checked, with its paths made absolute."""

    name: str
    form: EvalRunConfig
    deps: tuple[dg.AssetKey, ...]
    automation: str
    timezone: str
    store: str
    checks: CheckSettings

    @property
    def shape(self) -> EvaluationShape:
        return EvaluationShape(
            key_prefix=(KEY_ROOT, self.name),
            deps=self.deps,
            partitions=dg.DynamicPartitionsDefinition(name=f"{KEY_ROOT}_{self.name}_runs"),
            resource_keys=ResourceKeys.prefixed(f"{KEY_ROOT}_{self.name}"),
            blocking_checks=True,
            group=KEY_ROOT,
            job_name=f"{KEY_ROOT}_{self.name}_evaluate",
            job_tags={SUITE_TAG: self.name},
            # The suite's own run_summary is its dataset's series.
            by_dataset=False,
        )


def _absolute(folder: Path, path: str | None) -> str | None:
    return None if path is None else str((folder / path).resolve())


@dg.scaffold_with(EvaluationSuiteScaffolder)
class EvaluationSuite(dg.Component, dg.Model, dg.Resolvable):
    """Evaluate a RAG pipeline with ragproof beside the assets that build it.

    The suite's assets are ragproof's own, under `ragproof/<name>/`: `eval_dataset`
    (depending on `deps`, your own assets) -> `adapter_outputs`, `judge_verdicts`,
    `case_scores` -> `run_summary`, one partition per evaluation run. Their job is
    `ragproof_<name>_evaluate`; its runs are ragproof runs (tagged
    `ragproof/suite: <name>`), which `ragproof runs`, `sql`, `report`, `compare` and
    `serve` show with the store's other runs.

    `run_summary`'s materializations carry `ragproof_run_id`, `mean/<metric>` for each
    scored metric, `cases`, `case_failures` and `report`: its Plots tab charts each
    metric run after run. Its checks `failure_rate`, `no_regression` and `floors` are
    blocking: a failing one fails the run and holds back what depends on the summary.

    `automation: on_deps` starts one evaluation at the daemon's next tick after any dep
    is materialized (the sensor `ragproof_<name>_on_deps`, running by default); a cron
    string starts one on that schedule (`ragproof_<name>`, running by default, in
    `timezone`).
    """

    name: str = Field(
        description="The suite's name ([A-Za-z0-9_]+): its assets are ragproof/<name>/...",
    )
    dataset: str = Field(
        description="The dataset file (JSON Lines or Parquet, ragproof's CONTRACT section 1); "
        "a relative path is from this defs.yaml's folder.",
    )
    config_file: Annotated[
        str | None,
        _described(
            "A ragproof.toml: the adapter to evaluate, [run], [judge], [gate] and your "
            "own metrics (default: every setting at its default, the demo adapter); relative to "
            "this defs.yaml's folder."
        ),
    ] = None
    metrics: Annotated[
        list[str] | None,
        _described(
            "The metrics to score, over the config file's run.metrics "
            "(default: the config file's selection)."
        ),
    ] = None
    deps: Annotated[
        list[str],
        _described(
            "Your project's asset keys eval_dataset depends on (a/b for a key of two "
            "parts), such as the asset that builds your vector index."
        ),
    ] = Field(
        default_factory=list,
    )
    automation: Annotated[
        str,
        _described(
            "on_deps: one evaluation after any dep is materialized; a cron string "
            '("0 2 * * *"): one on that schedule; none: launched by hand.'
        ),
    ] = NONE
    timezone: Annotated[
        str,
        _described("The time zone of a cron automation (an IANA name, default UTC)."),
    ] = "UTC"
    store: Annotated[
        str | None,
        _described(
            "The ragproof store: a folder (relative to this defs.yaml's folder) or "
            "s3://bucket/prefix (default: $RAGPROOF_STORE when the run starts, else data/store)."
        ),
    ] = None
    max_failure_share: Annotated[
        float,
        _described(
            "The failure_rate check fails (and blocks) above this share of cases with "
            "a case failure or a judge error."
        ),
    ] = Field(
        default=CheckSettings().max_failure_share,
        ge=0,
        le=1,
    )
    regression_tolerance: Annotated[
        float,
        _described(
            "The no_regression check fails (and blocks) when a metric got "
            "significantly worse by more than this (absolute) since the suite's last completed run."
        ),
    ] = Field(
        default=CheckSettings().regression_tolerance,
        ge=0,
    )

    @classmethod
    def get_spec(cls) -> dg.ComponentTypeSpec:
        return dg.ComponentTypeSpec(
            tags=["ragproof", "evaluation", "rag"],
            produces=["asset", "asset_check", "job", "schedule", "sensor", "resource"],
        )

    def plan(self, folder: Path) -> SuitePlan:
        """The suite checked: ``ConfigError`` naming the defs.yaml and the attribute."""
        where = folder / DEFS_FILE
        if not SUITE_NAME.fullmatch(self.name):
            raise ConfigError(f"{where}: name: {NAME_RULE}, got {show_value(self.name)}")
        automation = self.automation.strip()
        if automation not in (ON_DEPS, NONE) and not is_valid_cron(automation):
            raise ConfigError(
                f"{where}: automation: expected on_deps, none or a cron schedule such as "
                f'"0 2 * * *", got {show_value(self.automation)}'
            )
        if automation == ON_DEPS and not self.deps:
            raise ConfigError(f"{where}: automation: on_deps needs deps (your own asset keys)")
        try:
            zoneinfo.ZoneInfo(self.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"{where}: timezone: unknown time zone {show_value(self.timezone)}"
            ) from None
        fields: dict[str, Any] = {"dataset": _absolute(folder, self.dataset)}
        if self.config_file is not None:
            fields["config_file"] = _absolute(folder, self.config_file)
        if self.metrics is not None:
            fields["metrics"] = list(self.metrics)
        try:
            # The settings every run of the suite gets, resolved now as a run resolves them.
            resolved = resolve_launch(
                fields.get("config_file"), None, None, {"metrics": fields.get("metrics")}
            )
            resolved.selected_metrics()
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        form = EvalRunConfig(**suite_identity(self.name, fields, resolved.run.name))
        store = self.store or ""
        if store and "://" not in store:
            store = str((folder / store).resolve())
        return SuitePlan(
            name=self.name,
            form=form,
            deps=tuple(dg.AssetKey.from_user_string(dep) for dep in self.deps),
            automation=automation,
            timezone=self.timezone,
            store=store,
            checks=CheckSettings(
                max_failure_share=self.max_failure_share,
                regression_tolerance=self.regression_tolerance,
            ),
        )

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return suite_definitions(self.plan(context.path))


def suite_definitions(plan: SuitePlan) -> dg.Definitions:
    """The suite's assets, job, resources and automation."""
    evaluation = build_evaluation(plan.shape, launch=plan.form)
    return dg.Definitions(
        assets=evaluation.assets,
        jobs=[evaluation.job],
        schedules=[_schedule(plan, evaluation)] if plan.automation not in (ON_DEPS, NONE) else [],
        sensors=[_sensor(plan, evaluation)] if plan.automation == ON_DEPS else [],
        resources=evaluation_resources(
            evaluation.shape, StoreResource(root=plan.store), plan.checks
        ),
    )


def _schedule(plan: SuitePlan, evaluation: Evaluation) -> dg.ScheduleDefinition:
    return scheduled_evaluation(
        f"{KEY_ROOT}_{plan.name}",
        evaluation,
        plan.form,
        cron=plan.automation,
        timezone=plan.timezone,
        running=True,
        tags={SUITE_TAG: plan.name},
        description=f"Evaluates suite {plan.name} as a new run on {plan.automation} "
        f"({plan.timezone}).",
    )


def _sensor(plan: SuitePlan, evaluation: Evaluation) -> dg.SensorDefinition:
    deps = ", ".join(key.to_user_string() for key in plan.deps)
    return evaluation_on_deps(
        f"{KEY_ROOT}_{plan.name}_on_deps",
        evaluation,
        plan.form,
        tags={SUITE_TAG: plan.name},
        description=f"Evaluates suite {plan.name} as a new run at the first tick after any of "
        f"{deps} is materialized.",
    )
