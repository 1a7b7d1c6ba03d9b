"""The ``[[metric]]`` tables of ragproof.toml: metrics of your own (CONTRACT section 21).

Each table declares one metric, either a rubric the judge grades::

    [[metric]]
    name = "custom.tone"
    rubric = "Is the answer polite and free of promises the policy does not make?"
    bands = ["no", "partly", "yes"]
    material = ["question", "answer", "context"]
    fixtures = "tone_fixtures.jsonl"

or a Python function called once per case::

    [[metric]]
    name = "custom.short_answer"
    function = "my_metrics:short_answer"
    higher_is_better = true
    timeout_s = 10          # optional: each call's time limit (default 10 s)
    reads = ["answer"]      # optional, either kind: what it reads

``reads`` names what the metric reads of a case's output (``metrics.spec.READS``:
retrieved, answer, citations, tool_calls, usage, context, latency), so a live run
calls only the adapter methods its metrics need; without it, everything.

Tables are checked as strictly as the rest of the file: unknown keys (with
the closest known one), a name outside ``custom.``, two to five distinct
bands, material from ``MATERIALS``, exactly one of ``rubric`` and
``function``. The first problem is one line naming ``metric[N].KEY``, N
counting tables from 1 as they appear in the file. ``fixtures`` is resolved
against the config file's folder. This module holds the tables as data; the
metrics they declare are built in ``ragproof_core.metrics.custom``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragproof_core.adapters.loading import AdapterLoadError, resolve_target
from ragproof_core.errors import show_key, show_value, unknown_key_reason
from ragproof_core.metrics.function_calls import DEFAULT_TIMEOUT_S
from ragproof_core.metrics.spec import READS

PREFIX = "custom."
MATERIALS: tuple[str, ...] = ("question", "answer", "context", "expected_answer", "history")
MIN_BANDS, MAX_BANDS = 2, 5
KEYS: tuple[str, ...] = (
    "name",
    "rubric",
    "bands",
    "material",
    "fixtures",
    "function",
    "higher_is_better",
    "reads",
    "timeout_s",
)
RUBRIC_ONLY: tuple[str, ...] = ("rubric", "bands", "material", "fixtures")
FUNCTION_ONLY: tuple[str, ...] = ("timeout_s",)
# The name is a reply key in combined mode and a word on the request's parts line.
_NAME = re.compile(r"custom\.[A-Za-z0-9_]+")
_FUNCTION = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


class MetricTableError(ValueError):
    """A malformed ``[[metric]]`` table; the message is ``metric[N].KEY: reason``."""


@dataclass(frozen=True, slots=True)
class MetricTable:
    """One ``[[metric]]`` table, checked. Exactly one of ``rubric`` and ``function`` is set."""

    name: str
    higher_is_better: bool = True
    rubric: str | None = None
    bands: tuple[str, ...] = ()
    material: tuple[str, ...] = ()
    fixtures: str | None = None  # absolute path
    function: str | None = None  # module:function
    reads: tuple[str, ...] = ()  # what it reads of a case's output; empty: everything
    timeout_s: float = DEFAULT_TIMEOUT_S  # a function metric's time limit a call

    @property
    def kind(self) -> str:
        return "rubric" if self.rubric is not None else "function"

    def to_dict(self) -> dict[str, Any]:
        """As stored in a run's manifest (``from_dict`` reads it back)."""
        out: dict[str, Any] = {"name": self.name, "higher_is_better": self.higher_is_better}
        if self.rubric is not None:
            out.update(rubric=self.rubric, bands=list(self.bands), material=list(self.material))
            if self.fixtures is not None:
                out["fixtures"] = self.fixtures
        else:
            out["function"] = self.function
            if self.timeout_s != DEFAULT_TIMEOUT_S:
                out["timeout_s"] = self.timeout_s
        if self.reads:
            out["reads"] = list(self.reads)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricTable:
        return cls(
            name=data["name"],
            higher_is_better=data.get("higher_is_better", True),
            rubric=data.get("rubric"),
            bands=tuple(data.get("bands", ())),
            material=tuple(data.get("material", ())),
            fixtures=data.get("fixtures"),
            function=data.get("function"),
            reads=tuple(data.get("reads", ())),
            timeout_s=data.get("timeout_s", DEFAULT_TIMEOUT_S),
        )


def parse_metric_tables(raw: Any, folder: Path) -> tuple[MetricTable, ...]:
    """The checked tables of ``[[metric]]`` (``raw`` as TOML decoded it); ``folder``
    holds the config file. Raises ``MetricTableError`` at the first problem."""
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise MetricTableError(f"metric: expected [[metric]] tables, got {show_value(raw)}")
    tables: list[MetricTable] = []
    for number, table in enumerate(raw, 1):
        parsed = _parse_table(table, f"metric[{number}]", folder)
        if any(t.name == parsed.name for t in tables):
            raise MetricTableError(f"metric[{number}].name: {parsed.name!r} is declared twice")
        tables.append(parsed)
    return tuple(tables)


def _parse_table(table: Mapping[str, Any], where: str, folder: Path) -> MetricTable:
    for key in table:
        if key not in KEYS:
            raise MetricTableError(f"{where}.{show_key(key)}: {unknown_key_reason(key, KEYS)}")
    name = table.get("name")
    if name is None:
        raise MetricTableError(f"{where}.name: required")
    _string(name, f"{where}.name")
    if not _NAME.fullmatch(name):
        raise MetricTableError(
            f"{where}.name: must start with {PREFIX!r} followed by letters, digits or "
            f"underscores, got {show_value(name)}"
        )
    higher = table.get("higher_is_better", True)
    if not isinstance(higher, bool):
        raise MetricTableError(
            f"{where}.higher_is_better: expected true or false, got {show_value(higher)}"
        )
    reads = _reads(table, where)
    has_rubric, has_function = "rubric" in table, "function" in table
    if has_rubric == has_function:
        raise MetricTableError(
            f"{where}: give exactly one of rubric (a judge grades it) or function "
            "(a Python function scores it)"
        )
    if has_function:
        for key in RUBRIC_ONLY:
            if key in table:
                raise MetricTableError(f"{where}.{key}: only a rubric metric has {key}")
        function = table["function"]
        _string(function, f"{where}.function")
        if not _FUNCTION.fullmatch(function):
            raise MetricTableError(
                f"{where}.function: expected an import path 'module:function', "
                f"got {show_value(function)}"
            )
        return MetricTable(
            name, higher, function=function, timeout_s=_timeout(table, where), reads=reads
        )
    for key in FUNCTION_ONLY:
        if key in table:
            raise MetricTableError(f"{where}.{key}: only a function metric has {key}")
    rubric = table["rubric"]
    _string(rubric, f"{where}.rubric")
    bands = _words(table, "bands", where)
    if not MIN_BANDS <= len(bands) <= MAX_BANDS:
        raise MetricTableError(
            f"{where}.bands: expected {MIN_BANDS} to {MAX_BANDS} bands, got {len(bands)}"
        )
    material = _words(table, "material", where)
    unknown = [m for m in material if m not in MATERIALS]
    if unknown:
        raise MetricTableError(
            f"{where}.material: {unknown[0]!r} is not material; choose from {', '.join(MATERIALS)}"
        )
    fixtures = table.get("fixtures")
    if fixtures is not None:
        _string(fixtures, f"{where}.fixtures")
        resolved = (folder / fixtures).resolve()
        if not resolved.is_file():
            raise MetricTableError(f"{where}.fixtures: no such file {str(resolved)!r}")
        fixtures = str(resolved)
    return MetricTable(name, higher, rubric, bands, material, fixtures, reads=reads)


def _reads(table: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """The optional ``reads`` key: names of ``READS``; absent, everything (empty)."""
    if "reads" not in table:
        return ()
    reads = _words(table, "reads", where)
    unknown = [r for r in reads if r not in READS]
    if unknown or not reads:
        raise MetricTableError(
            f"{where}.reads: {show_value(unknown[0] if unknown else reads)} is not something "
            f"a metric reads; choose from {', '.join(READS)}"
        )
    return reads


def _timeout(table: Mapping[str, Any], where: str) -> float:
    value = table.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise MetricTableError(
            f"{where}.timeout_s: expected a number of seconds above 0, got {show_value(value)}"
        )
    return float(value)


def _string(value: Any, where: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise MetricTableError(f"{where}: expected a non-empty string, got {show_value(value)}")


def _words(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    if key not in table:
        raise MetricTableError(f"{where}.{key}: required for a rubric metric")
    value = table[key]
    if not isinstance(value, list):
        raise MetricTableError(
            f"{where}.{key}: expected a list of strings, got {show_value(value)}"
        )
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise MetricTableError(
                f"{where}.{key}[{i}]: expected a non-empty string, got {show_value(item)}"
            )
    if len(set(value)) != len(value):
        raise MetricTableError(f"{where}.{key}: each entry once, got {show_value(value)}")
    return tuple(value)


def check_functions(tables: Sequence[MetricTable]) -> None:
    """Import every function metric's function: a missing module or name is bad input
    before a run is created, not an error on every case."""
    for number, table in enumerate(tables, 1):
        if table.function is not None:
            try:
                resolve_target(table.function, "function")
            except AdapterLoadError as exc:
                raise MetricTableError(f"metric[{number}].function: {exc}") from None


def tables_to_dicts(tables: Sequence[MetricTable]) -> list[dict[str, Any]]:
    return [t.to_dict() for t in tables]


def tables_from_dicts(data: Sequence[Mapping[str, Any]] | None) -> tuple[MetricTable, ...]:
    """Inverse of ``tables_to_dicts``; a manifest written before custom metrics has none."""
    return tuple(MetricTable.from_dict(d) for d in data or ())
