"""The results browser's runs page filters (CONTRACT sections 22 and 31), applied in the
catalog query: a page of 50 runs is the newest 50 that match, ``total`` counts every run
that matches, and a run on no page of the unfiltered list is found by its filter.

Each filter is the value the page shows for a run (``static/app.js``'s ``RUN_FILTERS``:
the same placeholders, ``–`` for no name, k or source match, ``none`` for no judge), as
one SQL expression over the catalog's run rows; a tag filter is ``KEY=VALUE``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ragproof_core.config.identity import tag_key_problem
from ragproof_core.store.catalog_views import RUN_STATES_VIEW
from ragproof_core.store.run_store import IN_FORCE

NONE = "–"


def _settings(key: str) -> str:
    # The run's ``[run]`` setting as ``stored_run_settings`` reads it (NULL when its
    # config is no JSON, as that reads an empty dict).
    config = "CASE WHEN json_valid(config_json) THEN config_json END"
    return f"json_extract_string({config}, '$.run.{key}')"


def _shown(expression: str, placeholder: str = NONE) -> str:
    return f"coalesce(nullif({expression}, ''), '{placeholder}')"


# The page's filters (query parameter, the value a run shows), in the page's order; the
# tag filter is matched against the run's tags object instead.
FILTERS: dict[str, str] = {
    "dataset": "dataset",
    "adapter": "adapter",
    "name": _shown("name"),
    "judge": _shown("judge_model", "none"),
    "k": _shown(_settings("k")),
    "source_match": _shown(_settings("source_match")),
    "mode": _shown("judge_mode"),
}
TAG = "tag"
NAMES = (*FILTERS, TAG)
# Each filter's list offers at most this many values (those of the newest runs): a year
# of differently named runs keeps the page small; any value can ride in the address.
OPTIONS = 200

_TAG_VALUE = "CASE WHEN json_valid(tags) THEN json_extract_string(tags, ?) END"


def chosen_filters(params: Mapping[str, str]) -> dict[str, str]:
    """The filters a request's query parameters set (an empty value: no filter)."""
    return {name: params[name] for name in NAMES if params.get(name)}


def where(filters: Mapping[str, str]) -> tuple[str, list[Any]]:
    """The catalog condition of the runs in force that match every filter, and its
    parameters."""
    clauses, params = [IN_FORCE], []
    for name, value in filters.items():
        if name == TAG:
            key, equals, text = value.partition("=")
            if not equals or tag_key_problem(key) is not None:
                clauses.append("FALSE")  # no run has such a tag
                continue
            clauses.append(f"{_TAG_VALUE} = ?")
            params += [f'$."{key}"', text]
        else:
            clauses.append(f"{FILTERS[name]} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def count_query(condition: str) -> str:
    return f"SELECT count(*) AS n FROM {RUN_STATES_VIEW} WHERE {condition}"


_SHOWN = {**FILTERS, TAG: "tags"}


def _newest(name: str) -> str:
    return (
        f"SELECT '{name}' AS filter, value FROM (SELECT {name} AS value, max(started_at) "
        f"AS newest FROM shown GROUP BY 1 ORDER BY newest DESC, 1 LIMIT {OPTIONS})"
    )


# Every filter's values over the runs in force (not only the page's), one query reading
# the catalog's runs once; the tags as their distinct objects, split into KEY=VALUE by
# ``options``.
OPTIONS_QUERY = (
    "WITH shown AS MATERIALIZED (SELECT started_at, "
    + ", ".join(f"{expression} AS {name}" for name, expression in _SHOWN.items())
    + f" FROM {RUN_STATES_VIEW} WHERE {IN_FORCE}) "
    + " UNION ALL ".join(_newest(name) for name in _SHOWN)
)


def options(table: pa.Table) -> dict[str, list[str]]:
    """``OPTIONS_QUERY``'s rows as each filter's values, sorted."""
    found: dict[str, set[str]] = {name: set() for name in NAMES}
    for row in table.to_pylist():
        if row["value"] is None:
            continue
        if row["filter"] != TAG:
            found[row["filter"]].add(row["value"])
            continue
        try:
            tags = json.loads(row["value"])
        except json.JSONDecodeError:
            continue
        if isinstance(tags, dict):
            found[TAG].update(f"{key}={value}" for key, value in tags.items())
    return {name: sorted(values) for name, values in found.items()}


def total(table: pa.Table) -> int:
    return int(table.column("n")[0].as_py())


def queries(filters: Mapping[str, str]) -> tuple[str, list[Any], Sequence[tuple[str, list]]]:
    """The page's condition and parameters, and the two more queries its reader runs:
    the runs that match counted, and every filter's values."""
    condition, params = where(filters)
    return condition, params, [(count_query(condition), params), (OPTIONS_QUERY, [])]
