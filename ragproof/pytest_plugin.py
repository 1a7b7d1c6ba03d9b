"""The pytest plugin (entry point ``pytest11``, name ``ragproof``; CONTRACT section 26).

It adds the option ``--ragproof-store`` (default: a folder under pytest's base
temp), the fixture ``ragproof_evaluate`` (``ragproof.evaluate`` into that store) and,
at the end of the session, a list of the runs made with their run ids and the
metrics that failed (the floors ``ragproof.testing``'s assertions found broken,
the regressed metrics, else the floors of the run's own ``[gate]`` table).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

STORE_OPTION = "--ragproof-store"
_RUNS = pytest.StashKey[list]()
_STORE = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragproof", "ragproof evaluation runs")
    group.addoption(
        STORE_OPTION,
        dest="ragproof_store",
        metavar="STORE",
        default=None,
        help="the store ragproof_evaluate's runs go to: a folder or a URL (default: a "
        "folder under pytest's base temp)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RUNS] = []


def _session_store(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> str:
    if _STORE not in config.stash:
        given = config.getoption("ragproof_store")
        if given:
            config.stash[_STORE] = given
        else:
            config.stash[_STORE] = str(tmp_path_factory.getbasetemp() / "ragproof-store")
    return config.stash[_STORE]


@pytest.fixture(scope="session")
def ragproof_evaluate(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Any]:
    """``ragproof.evaluate`` with the store of ``--ragproof-store`` (unless ``store=`` is
    given). Without that option and without ``DAGSTER_HOME``, Dagster's runs are kept
    under the base temp too, beside the store."""
    import ragproof

    store = _session_store(pytestconfig, tmp_path_factory)
    home = None
    if not pytestconfig.getoption("ragproof_store") and not os.environ.get("DAGSTER_HOME"):
        home = tmp_path_factory.getbasetemp() / "ragproof-dagster-home"

    def evaluate(dataset: Any, adapter: Any = None, **options: Any) -> ragproof.Run:
        options.setdefault("store", store)
        with _dagster_home(home):
            run = ragproof.evaluate(dataset, adapter, **options)
        pytestconfig.stash[_RUNS].append(run)
        return run

    return evaluate


class _dagster_home:
    def __init__(self, home: Path | None) -> None:
        self.home = home
        self.saved: str | None = None

    def __enter__(self) -> None:
        if self.home is not None:
            self.saved = os.environ.get("DAGSTER_HOME")
            os.environ["DAGSTER_HOME"] = str(self.home)

    def __exit__(self, *exc: object) -> None:
        if self.home is None:
            return
        if self.saved is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = self.saved


def _failed_metrics(run: Any) -> list[str]:
    from ragproof.testing import FAILED_METRICS

    if run.run_id in FAILED_METRICS:
        return FAILED_METRICS[run.run_id]
    try:
        return [r.floor.metric for r in run.check() if not r.passed]
    except Exception:  # noqa: BLE001 - the summary never fails the session
        return []


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    runs = config.stash.get(_RUNS, [])
    if not runs:
        return
    terminalreporter.section("ragproof runs")
    terminalreporter.write_line(f"store: {config.stash.get(_STORE, '?')}")
    for run in runs:
        failed = _failed_metrics(run)
        shown = ", ".join(failed) if failed else "none"
        terminalreporter.write_line(f"{run.run_id}  {run.status}  failed: {shown}")
