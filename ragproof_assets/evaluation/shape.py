"""What tells one set of evaluation assets from another: the parameters of the asset
factory (``factory.py``).

ragproof's own code location is the factory at these defaults: asset keys
``eval_dataset`` to ``run_summary``, the ``evaluation_runs`` partitions, the
resource keys ``store``, ``judge_resource``, ``checks`` and the two IO managers,
non-blocking checks, the ``evaluate`` job. A suite in a team's own Dagster
project (the ``EvaluationSuite`` component) is the factory under a key prefix
(``ragproof/<name>/``), with deps on the project's own assets, resource keys and
op names of its own (several suites, and the project's own resources, side by
side in one set of definitions), partitions of its own and blocking checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ragproof_assets.evaluation.config import EVAL_OP, LaunchForm, evaluate_run_config
from ragproof_assets.evaluation.partitions import evaluation_runs

GROUP = "evaluation"
JOB = "evaluate"


@dataclass(frozen=True)
class ResourceKeys:
    """The resource keys the evaluation's steps ask for."""

    store: str = "store"
    judge: str = "judge_resource"
    checks: str = "checks"
    tables: str = "table_io_manager"
    ledger: str = "judge_ledger_io_manager"

    @classmethod
    def prefixed(cls, prefix: str) -> ResourceKeys:
        """Every key as ``<prefix>_<key>``."""
        return cls(**{f.name: f"{prefix}_{f.default}" for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class EvaluationShape:
    """The factory's parameters; the defaults are ragproof's own code location."""

    key_prefix: tuple[str, ...] = ()
    # Upstream assets of eval_dataset: the project's own (its index, its prompts).
    deps: tuple[dg.AssetKey, ...] = ()
    partitions: dg.DynamicPartitionsDefinition = evaluation_runs
    resource_keys: ResourceKeys = ResourceKeys()
    # Blocking checks fail the run (and hold back assets downstream of run_summary) when
    # one fails; ragproof's own location keeps them non-blocking, so a run where nothing
    # scores still exits as CONTRACT sections 5 and 14 say.
    blocking_checks: bool = False
    group: str = GROUP
    job_name: str = JOB
    # Tags of every run of the job (a suite's name).
    job_tags: Mapping[str, str] = field(default_factory=dict)
    # Observe each run's means under scores_by_dataset/<dataset> too (dataset_scores.py):
    # ragproof's own assets hold every dataset's runs; a suite's hold one dataset's.
    by_dataset: bool = True

    def key(self, name: str) -> dg.AssetKey:
        return dg.AssetKey([*self.key_prefix, name])

    def node_name(self, name: str) -> str:
        """An op's or graph's name: Dagster wants them unique in a set of definitions, so
        a prefixed shape prefixes them as Dagster names a prefixed asset's op."""
        return "__".join([*self.key_prefix, name])

    @property
    def eval_op(self) -> str:
        """The dataset step's op: its config is the run's launch form."""
        return self.node_name(EVAL_OP)

    def launched_form(self, run: dg.DagsterRun) -> dict[str, Any] | None:
        """The launch form's fields in ``run``'s config; None for steps launched without
        the dataset step (a re-execution of the steps after it)."""
        return run.run_config.get("ops", {}).get(self.eval_op, {}).get("config")

    def run_config(self, form: LaunchForm, **extra: Any) -> dict[str, Any]:
        """The job's run config for ``form`` (``config.evaluate_run_config``)."""
        return evaluate_run_config(form, op=self.eval_op, **extra)
