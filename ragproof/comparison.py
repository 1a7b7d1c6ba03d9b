"""``ragproof.compare``: two stored runs compared as ``ragproof compare`` does."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ragproof.errors import BadInput
from ragproof.results import Run
from ragproof.stores import store_location, using_store
from ragproof_cli.errors import mixed_judges_refusal, mixed_settings_refusal, user_message
from ragproof_core.compare import (
    HOLM,
    MixedJudgesError,
    MixedSettingsError,
    compare_stored_runs,
    describe,
    regressions,
)
from ragproof_core.errors import UserError
from ragproof_core.metrics import stored_registry


@dataclass(frozen=True)
class Comparison:
    """Run B against baseline A. ``table``: one row per metric, the rows
    ``ragproof compare --json`` prints under ``metrics``; ``regressions``: the metrics
    of B significantly worse than A by more than the margin (``compare
    --fail-on-regression``'s), each a row of ``table``; ``lines``: each regression as
    the command line words it."""

    run_a: str
    run_b: str
    table: pd.DataFrame = field(repr=False)
    regressions: pd.DataFrame = field(repr=False)
    lines: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def _repr_html_(self) -> str:
        return self.table.to_html(index=False, na_rep="-")


def _run_id(run: Run | str) -> str:
    return run.run_id if isinstance(run, Run) else str(run)


def compare(
    a: Run | str,
    b: Run | str,
    *,
    store: str | os.PathLike[str] | None = None,
    allow_mixed_judges: bool = False,
    allow_mixed_settings: bool = False,
    correction: str = HOLM,
    margin: float = 0.0,
) -> Comparison:
    """Compare run ``b`` against baseline ``a`` (each a ``Run`` or a run id), with the
    options of ``ragproof compare``. A refused comparison (mixed judges or settings,
    an unknown run) raises ``BadInput`` with the command line's line."""
    if margin < 0:
        raise BadInput(f"ragproof: --margin must be at least 0, got {margin:g}")
    if store is None and isinstance(b, Run):
        store = b.store
    ids = (_run_id(a), _run_id(b))
    with using_store(store) as opened:
        try:
            for run_id in ids:
                opened.require_intact(run_id)
            records = [opened.get_run(run_id) for run_id in ids]
            result = compare_stored_runs(
                opened,
                *records,
                allow_mixed_judges=allow_mixed_judges,
                registry=stored_registry(*(record.config_json for record in records)),
                allow_mixed_settings=allow_mixed_settings,
                correction=correction,
            )
        except MixedJudgesError as exc:
            raise BadInput(mixed_judges_refusal(exc)) from None
        except MixedSettingsError as exc:
            raise BadInput(mixed_settings_refusal(exc)) from None
        except UserError as exc:
            raise BadInput(user_message(exc)) from None
    raw = result.to_dict()
    table = pd.DataFrame(list(raw["metrics"].values()))
    worse = regressions(result, margin=margin)
    names = [m.metric for m in worse]
    regressed = table[table["metric"].isin(names)].reset_index(drop=True)
    return Comparison(
        run_a=ids[0],
        run_b=ids[1],
        table=table,
        regressions=regressed,
        lines=tuple(describe(m) for m in worse),
        raw={**raw, "store": store_location(store)},
    )
