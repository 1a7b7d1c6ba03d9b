"""``ragproof.Run``: a stored run's results as DataFrames, and ``load_run``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ragproof.errors import BadInput
from ragproof.stores import store_location, using_store
from ragproof_cli.errors import user_message
from ragproof_core.compare import FloorResult, check_floors, floors_for
from ragproof_core.errors import UserError
from ragproof_core.present import gather_report, run_json, write_html
from ragproof_core.store import RunStore, run_read_only

# View ``case_results``' columns a ``Run.cases`` row holds (CONTRACT section 26).
CASE_COLUMNS = ("case_id", "metric", "status", "value", "reason")
SUMMARY_COLUMNS = (
    "metric",
    "mean",
    "p50",
    "p95",
    "scored",
    "skipped",
    "errored",
    "not_applicable",
    "judge_errors",
)


@dataclass(frozen=True)
class Run:
    """One stored run, read from its store.

    ``summary``: one row per metric (the columns of the summary table: ``metric``,
    ``mean``, ``p50``, ``p95``, ``scored``, ``skipped``, ``errored``,
    ``not_applicable``, ``judge_errors``). ``cases``: one row per case and metric
    (``case_id``, ``metric``, ``status``, ``value``, ``reason``). ``outputs``: view
    ``outputs``, what the pipeline said. ``judge``: the ``judge`` object of
    ``ragproof run --json``.
    """

    run_id: str
    status: str
    summary: pd.DataFrame = field(repr=False)
    cases: pd.DataFrame = field(repr=False)
    outputs: pd.DataFrame = field(repr=False)
    judge: dict[str, Any] = field(repr=False)
    store: str = field(repr=False)

    def metrics(self) -> dict[str, dict[str, Any]]:
        """The ``metrics`` object of ``ragproof run --json``: name -> its figures."""
        return {
            row["metric"]: {k: _plain(row[k]) for k in SUMMARY_COLUMNS[1:]}
            for row in self.summary.to_dict("records")
        }

    def check(self, config: str | os.PathLike[str] | None = None) -> list[FloorResult]:
        """The floors of ``config``'s ``[gate]`` table (default: those the run was started
        with) applied to this run, as ``ragproof check`` applies them (CONTRACT section
        25): one result per floor, ``passed`` and ``line()`` on each."""
        with using_store(self.store) as store:
            try:
                floors = floors_for(store, self.run_id, config)
            except UserError as exc:
                raise BadInput(user_message(exc)) from None
            return check_floors(store, self.run_id, floors)

    def report(self, path: str | os.PathLike[str], *, against: str | None = None) -> Path:
        """Write the run's self-contained HTML report (``ragproof report --out``) to
        ``path``; ``against``: a baseline run id. Returns the file written."""
        with using_store(self.store) as store:
            data = gather_report(store, self.run_id, against=against)
            return write_html(Path(path), data).resolve()

    def _repr_html_(self) -> str:
        title = f"<p>run <code>{self.run_id}</code>: {self.status}</p>"
        return title + self.summary.to_html(index=False, na_rep="-")


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def _view(store: RunStore, query: str) -> pd.DataFrame:
    result = run_read_only(store.layout, query)
    return pd.DataFrame.from_records(result.rows, columns=result.columns)


def read_run(store: RunStore, run_id: str) -> Run:
    """Run ``run_id`` of ``store`` (RAGPROOF_STORE set to it), its tables read now."""
    try:
        record = store.get_run(run_id)
    except UserError as exc:
        raise BadInput(user_message(exc)) from None
    shown = run_json(run_id, record.status, store.summaries(run_id), record.judge_activity())
    summary = pd.DataFrame(
        [{"metric": name, **figures} for name, figures in shown["metrics"].items()],
        columns=list(SUMMARY_COLUMNS),
    )
    quoted = run_id.replace("'", "''")
    cases = _view(
        store,
        f"SELECT {', '.join(CASE_COLUMNS)} FROM case_results WHERE run_id = '{quoted}' "
        "ORDER BY case_id, metric",
    )
    outputs = _view(store, f"SELECT * FROM outputs WHERE run_id = '{quoted}' ORDER BY case_id")
    return Run(
        run_id=run_id,
        status=record.status,
        summary=summary,
        cases=cases,
        outputs=outputs,
        judge=shown["judge"],
        store=store_location(os.environ.get("RAGPROOF_STORE")),
    )


def load_run(run_id: str, store: str | os.PathLike[str] | None = None) -> Run:
    """A stored run (any run: made from Python, ``ragproof run``, the UI or a schedule).
    ``store``: a folder or URL (default: ``RAGPROOF_STORE``, else ``data/store``).
    An unknown run raises ``BadInput``."""
    with using_store(store) as opened:
        return read_run(opened, run_id)
