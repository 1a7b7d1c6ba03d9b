"""Which executor runs the evaluation job's steps (shards) in a deployment.

``RAGPROOF_EXECUTOR`` (read when the code location loads):

- unset or ``multiprocess``: Dagster's default, each step a process on the
  run's machine (``ragproof run --shards N`` uses it);
- ``k8s``: ``dagster_k8s.k8s_job_executor``, each step (each shard) a
  Kubernetes Job of its own (install ``dagster-k8s``);
- ``celery``: ``dagster_celery.celery_executor``, each step a Celery task
  (install ``dagster-celery``), its broker and result backend read from
  ``DAGSTER_CELERY_BROKER_URL`` and ``DAGSTER_CELERY_BACKEND_URL`` in every process
  that runs the job (``CELERY_SETTINGS``), so a run from the command line, the UI or
  a schedule reaches the workers without run config of its own.

The Kubernetes executor's own settings (namespace, image, env secrets) come from
run config or the run launcher, see docs/deploy.md.
"""

from __future__ import annotations

import os


class ExecutorChoiceError(ValueError):
    pass


# The Celery executor's settings, from the environment of the process running the job:
# the same block the workers are started with (deploy/celery.yaml, `dagster-celery
# worker start -y`), so both sides name one broker.
CELERY_SETTINGS = {
    "broker": {"env": "DAGSTER_CELERY_BROKER_URL"},
    "backend": {"env": "DAGSTER_CELERY_BACKEND_URL"},
}


def _choice(env: dict[str, str] | None) -> str:
    return (env if env is not None else os.environ).get("RAGPROOF_EXECUTOR", "").strip()


def uses_default_executor(env: dict[str, str] | None = None) -> bool:
    """Whether ``RAGPROOF_EXECUTOR`` keeps Dagster's default, each step a process on the
    run's machine; read without importing Dagster or an executor's package."""
    return _choice(env) in ("", "multiprocess")


def executor_from_env(env: dict[str, str] | None = None):
    """The executor ``RAGPROOF_EXECUTOR`` names, or None for Dagster's default."""
    if uses_default_executor(env):
        return None
    choice = _choice(env)
    # Optional packages (the deploy extra), imported only for the executor chosen.
    if choice == "k8s":
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor
    if choice == "celery":
        # Optional, like dagster_k8s above.
        from dagster_celery import celery_executor

        return celery_executor.configured(CELERY_SETTINGS, name="celery")
    raise ExecutorChoiceError(
        f"RAGPROOF_EXECUTOR={choice!r}: use multiprocess (default), k8s or celery"
    )
