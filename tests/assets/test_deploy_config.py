"""docs/deploy.md's Kubernetes settings against the real dagster-k8s executor: the
job loads with RAGPROOF_EXECUTOR=k8s and accepts the run config the doc shows
(no cluster here: launching pods is only on paper, see the doc)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO

DEPLOY = REPO / "docs" / "deploy.md"


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DEPLOY.read_text(encoding="utf-8"), re.DOTALL)


def test_the_docs_run_config_is_valid_for_the_k8s_executor(tmp_path):
    pytest.importorskip("dagster_k8s")
    (run_config,) = [b for b in _yaml_blocks() if b.startswith("execution:")]
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text('{"id": "c1", "question": "q?"}\n', encoding="utf-8")
    config = yaml.safe_load(run_config)
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
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["k8s", "valid"]


def test_the_docs_dagster_yaml_names_postgres_and_the_k8s_launcher():
    (instance,) = [b for b in _yaml_blocks() if b.startswith("storage:")]
    parsed = yaml.safe_load(instance)
    assert list(parsed["storage"]) == ["postgres"]
    assert parsed["run_launcher"]["class"] == "K8sRunLauncher"
    # Secrets are only ever env references or Secret names, never values.
    assert parsed["storage"]["postgres"]["postgres_db"]["password"] == {
        "env": "DAGSTER_PG_PASSWORD"
    }
    assert not re.search(r"(SECRET_ACCESS_KEY|API_KEY|PASSWORD)\s*[=:]", instance)
    assert parsed["run_launcher"]["config"]["env_secrets"] == ["ragproof-store", "ragproof-judge"]
