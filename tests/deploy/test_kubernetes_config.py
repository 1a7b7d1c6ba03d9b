"""Kubernetes on paper, checked by machine: deploy/dagster-k8s.yaml, deploy/k8s-run-config.yaml
and deploy/helm-values.yaml (the files docs/deploy.md shows) against dagster-k8s's and
dagster-aws's own config schemas, with Dagster's own config validation. No cluster runs
here: nothing is launched, only every key and value is checked as Dagster would check it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster_aws.s3.compute_log_manager import S3ComputeLogManager
from dagster_k8s import K8sRunLauncher

from tests.conftest import REPO
from tests.deploy.conftest import DEPLOY

pytestmark = pytest.mark.deployment


def _load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8"))


def _validate(schema: Any, value: dict) -> None:
    """``value`` checked against a class's config schema by Dagster's public validation:
    as the config of one op (its errors are the ones Dagster gives a dagster.yaml)."""

    @dg.op(config_schema=schema)
    def probe() -> None:
        pass

    @dg.job
    def check() -> None:
        probe()

    dg.validate_run_config(check, {"ops": {"probe": {"config": value}}})


def test_the_kubernetes_instance_is_the_tested_postgres_instance_with_the_k8s_launcher():
    k8s, tested = _load("dagster-k8s.yaml"), _load("dagster.yaml")
    # The storage and queue are the ones tests/deploy/ run ragproof on, key for key.
    for key in ("storage", "concurrency", "telemetry"):
        assert k8s[key] == tested[key]
    assert (k8s["run_launcher"]["module"], k8s["run_launcher"]["class"]) == (
        "dagster_k8s",
        "K8sRunLauncher",
    )
    assert K8sRunLauncher.__module__.startswith(k8s["run_launcher"]["module"])
    _validate(K8sRunLauncher.config_type(), k8s["run_launcher"]["config"])
    assert S3ComputeLogManager.__module__ == k8s["compute_logs"]["module"]
    _validate(S3ComputeLogManager.config_type(), k8s["compute_logs"]["config"])
    # The run pods get every variable the storage reads: the password from its Secret,
    # the rest as plain variables.
    launcher = k8s["run_launcher"]["config"]
    given = {entry.split("=", 1)[0] for entry in launcher["env_vars"]} | {"DAGSTER_PG_PASSWORD"}
    wanted = {
        v["env"] for v in k8s["storage"]["postgres"]["postgres_db"].values() if isinstance(v, dict)
    }
    assert wanted <= given
    # Secrets are only ever env references or Secret names, never values.
    text = (DEPLOY / "dagster-k8s.yaml").read_text(encoding="utf-8")
    assert not re.search(r"(SECRET_ACCESS_KEY|API_KEY|PASSWORD)\s*[=:]", text)


def test_a_misspelt_launcher_key_is_refused_as_dagster_would():
    config = {**_load("dagster-k8s.yaml")["run_launcher"]["config"], "job_namspace": "x"}
    with pytest.raises(dg.DagsterInvalidConfigError, match="job_namspace"):
        _validate(K8sRunLauncher.config_type(), config)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _chart_rendered(values: dict) -> dict:
    """A Helm block as Dagster's chart renders it into dagster.yaml: camelCase keys in
    snake case, and the lists of ``{name: ...}`` Secrets and ConfigMaps as their names."""
    rendered = {}
    for key, value in values.items():
        if key in ("envSecrets", "envConfigMaps"):
            value = [entry["name"] for entry in value]
        rendered[_snake(key)] = value
    return rendered


def test_the_helm_values_render_a_launcher_and_compute_logs_dagster_k8s_accepts():
    values, instance = _load("helm-values.yaml"), _load("dagster-k8s.yaml")
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    launcher = _chart_rendered(values["runLauncher"]["config"]["k8sRunLauncher"])
    # The chart fills these from its own release (its instance ConfigMap, Postgres Secret).
    chart_given = {
        "instance_config_map": "dagster-instance",
        "postgres_password_secret": "dagster-postgresql-secret",
        "dagster_home": "/opt/dagster/dagster_home",
    }
    _validate(K8sRunLauncher.config_type(), {**launcher, **chart_given})
    assert values["computeLogManager"]["type"] == "S3ComputeLogManager"
    logs = _chart_rendered(values["computeLogManager"]["config"]["s3ComputeLogManager"])
    assert logs == instance["compute_logs"]["config"]
    _validate(S3ComputeLogManager.config_type(), logs)

    # The code location is the one `ragproof run` records its runs under, served from the
    # module workspace.yaml names, with the environment the runs get.
    (location,) = values["dagster-user-deployments"]["deployments"]
    workspace = yaml.safe_load((REPO / "workspace.yaml").read_text(encoding="utf-8"))
    (served,) = workspace["load_from"]
    assert location["name"] == served["python_module"]["location_name"] == "ragproof"
    assert location["dagsterApiGrpcArgs"] == ["-m", served["python_module"]["module_name"]]
    assert [e["name"] for e in location["envSecrets"]] == launcher["env_secrets"]
    assert [f"{e['name']}={e['value']}" for e in location["env"]] == launcher["env_vars"]


def test_the_run_config_is_valid_for_the_job_on_the_k8s_executor(tmp_path):
    config = _load("k8s-run-config.yaml")
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text('{"id": "c1", "question": "q?"}\n', encoding="utf-8")
    config["ops"]["eval_dataset"]["config"] = {"dataset": str(dataset), "shards": 8}
    script = (
        "import json, sys, dagster as dg\n"
        "from ragproof_assets.definitions import defs\n"
        "job = defs.resolve_job_def('evaluate')\n"
        "print(job.executor_def.name)\n"
        "dg.validate_run_config(job, json.loads(sys.argv[1]))\n"
        "print('valid')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config)],
        env={**os.environ, "RAGPROOF_EXECUTOR": "k8s"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["k8s", "valid"]
