"""The metric registry: every metric ragproof ships, declared once.

Each metric is one ``MetricSpec`` (``metrics.spec``) declared in the module
that scores it; this module finds those modules itself (every module of the
``metrics`` package with a ``METRICS`` tuple) and orders them by their
``REPORT_ORDER``.
Everything that lists metrics derives from the registry: the evaluation's
scoring (``run.evaluate`` reads each spec's scoring function), combined-mode
planning, the summary order, compare's directions, the ``metrics`` SQL view,
the command line's list of names, metric selection, calibration's
prompt-to-metric map and the docs table. A new metric is one ``MetricSpec``
in its module; a new module of metrics is found without an edit here
(docs/architecture.md).

``default`` says whether a run with no ``metrics`` selection scores it; the
trec_eval measures of CONTRACT section 19 are scored only when named, so a run
that names nothing reports exactly what it always did. ``cutoff`` names the run
setting that cuts the metric's ranking (``k``): only those metrics, and only
deterministic ones, take a per-metric cut-off ``@N`` (``metrics.cutoff``).

``needs`` says what a case must bring for the metric to be computed (anything
missing makes the case skip with a reason); ``judge`` says whether the metric
needs a judge (``required``), uses one when configured and otherwise falls
back to a heuristic (``optional``), or never asks one (``never``).

A run's own metrics (``[[metric]]`` tables, CONTRACT section 21) join the
shipped ones in a ``Registry`` of that run (``Registry.with_metrics``).
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import pkgutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from ragproof_core.metrics.cutoff import split_cutoff
from ragproof_core.metrics.spec import JUDGE_MODES, MetricGroup, MetricSpec

__all__ = [
    "BY_NAME",
    "FAMILIES",
    "LAST",
    "JUDGE_MODES",
    "METRICS",
    "ALL_METRIC_NAMES",
    "METRIC_NAMES",
    "REGISTRY",
    "MetricGroup",
    "MetricSelectionError",
    "MetricSpec",
    "Registry",
    "build_registry",
    "higher_is_better",
    "metric_modules",
    "metric_order",
    "registry_markdown",
    "select_metrics",
    "spec",
]


class MetricSelectionError(ValueError):
    """A metric name or pattern that matches no metric; the message lists them all."""


# Modules of this package built on the registry: not metric modules, and importing
# them while the registry is built would be circular.
BUILT_ON_REGISTRY: frozenset[str] = frozenset({"registry", "aggregate", "combined_run", "custom"})
# Where a metric module without a REPORT_ORDER reports: after the shipped ones.
LAST = 1000


def metric_modules(package: str = __package__) -> list[ModuleType]:
    """Every module of ``package`` (this one: ``ragproof_core.metrics``) that declares
    ``METRICS``, in report order: by its ``REPORT_ORDER`` (``LAST`` when it has none),
    then by name."""
    found = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if info.ispkg or info.name in BUILT_ON_REGISTRY:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        if hasattr(module, "METRICS"):
            found.append(module)
    return sorted(found, key=lambda m: (getattr(m, "REPORT_ORDER", LAST), m.__name__))


@dataclass(frozen=True)
class Registry:
    """Metric specs in report order, looked up by name (``name@N`` is its metric's)."""

    metrics: tuple[MetricSpec, ...]
    by_name: dict[str, MetricSpec] = field(init=False, repr=False, compare=False)
    rank: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, MetricSpec] = {}
        for declared in self.metrics:
            if declared.name in by_name:
                raise ValueError(f"metric {declared.name!r} is declared twice")
            by_name[declared.name] = declared
        object.__setattr__(self, "by_name", by_name)
        object.__setattr__(self, "rank", {name: i for i, name in enumerate(by_name)})

    @property
    def names(self) -> tuple[str, ...]:
        """Every metric a run scores on its cases when it selects none (the opt-in ones
        left out, and a conversation's own: ``conversation_names``)."""
        return tuple(m.name for m in self.metrics if m.default and not m.per_conversation)

    @property
    def conversation_names(self) -> tuple[str, ...]:
        """The metrics of a whole conversation (CONTRACT section 16) a run scores when it
        selects none; they have rows only where a run has conversations."""
        return tuple(m.name for m in self.metrics if m.default and m.per_conversation)

    @property
    def all_names(self) -> tuple[str, ...]:
        return tuple(self.by_name)

    def with_metrics(self, extra: Iterable[MetricSpec]) -> Registry:
        """This registry with ``extra`` (a run's own metrics) after its own."""
        extra = tuple(extra)
        return self if not extra else Registry((*self.metrics, *extra))

    def spec(self, name: str) -> MetricSpec | None:
        return self.by_name.get(split_cutoff(name)[0])

    def higher_is_better(self, name: str) -> bool:
        """A metric's direction; unknown (e.g. newer) metrics read as higher is better."""
        found = self.spec(name)
        return True if found is None else found.higher_is_better

    def bounded(self, name: str) -> bool:
        """Whether a metric's scores lie in [0, 1]; unknown metrics are not assumed to."""
        found = self.spec(name)
        return False if found is None else found.bounded

    def _order_key(self, name: str) -> tuple[int, int, str]:
        base, cutoff = split_cutoff(name)
        # A cut-off variant sits right after its metric at run.k, by cut-off.
        return self.rank.get(base, len(self.rank)), -1 if cutoff is None else cutoff, name

    def order(self, names: Iterable[str]) -> list[str]:
        """``names`` in registry order (``x@N`` right after ``x``), then unknown names sorted."""
        present = set(names)
        known = sorted((n for n in present if self.spec(n) is not None), key=self._order_key)
        return known + sorted(n for n in present if self.spec(n) is None)

    def _with_cutoff(self, name: str, cutoff: int) -> str:
        """``name`` (``metric@N`` as written) checked: the metric exists, has a cut-off and
        is deterministic, and N >= 1."""
        base = split_cutoff(name)[0]
        found = self.by_name.get(base)
        if found is None:
            close = difflib.get_close_matches(base, self.all_names, n=1)
            hint = f" (did you mean {close[0] + '@' + str(cutoff)!r}?)" if close else ""
            raise MetricSelectionError(f"metric {name!r} matches no metric{hint}")
        if found.cutoff is None or found.judged:
            with_cutoffs = ", ".join(m.name for m in self.metrics if m.cutoff and not m.judged)
            raise MetricSelectionError(
                f"metric {name!r}: {base} has no cut-off to set; @N applies to {with_cutoffs}"
            )
        if cutoff < 1:
            raise MetricSelectionError(f"metric {name!r}: the cut-off must be at least 1")
        return f"{base}@{cutoff}"

    def select(self, patterns: Sequence[str] | None) -> tuple[str, ...]:
        """The metrics matched by names or shell-style patterns, in registry order.

        ``None`` or an empty list selects every default metric. A pattern matches
        the default metrics; an opt-in metric (``default=False``) is selected by its
        exact name, or by a pattern that matches no default metric (``system.*``).
        ``metric@N`` selects a deterministic metric with a cut-off at N (listed right
        after the metric itself). A name or pattern that matches
        nothing raises ``MetricSelectionError`` listing every metric, with the
        closest name when there is one.
        """
        if not patterns:
            return self.names
        names = (*self.names, *self.conversation_names)
        chosen: set[str] = set()
        for raw in patterns:
            pattern = raw.strip()
            cutoff = split_cutoff(pattern)[1]
            if cutoff is not None:
                chosen.add(self._with_cutoff(pattern, cutoff))
                continue
            if pattern in self.by_name:
                chosen.add(pattern)
                continue
            matched = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
            if not matched:
                # A pattern naming only opt-in metrics (``system.*``) selects them.
                matched = [n for n in self.all_names if fnmatch.fnmatchcase(n, pattern)]
            if not matched:
                close = difflib.get_close_matches(pattern, self.all_names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise MetricSelectionError(
                    f"metric {pattern!r} matches no metric{hint}; metrics: {', '.join(self.names)}"
                )
            chosen.update(matched)
        return tuple(self.order(chosen))

    def for_prompt(self, prompt: str) -> MetricSpec | None:
        """The metric whose scores calibrate ``prompt`` against the fixtures' human scores."""
        return next((m for m in self.metrics if m.calibrates_prompt == prompt), None)


def build_registry() -> Registry:
    """The shipped metrics: the ``METRICS`` of every metric module, in report order."""
    return Registry(tuple(spec for module in metric_modules() for spec in module.METRICS))


REGISTRY = build_registry()
METRICS: tuple[MetricSpec, ...] = REGISTRY.metrics
# The families of the shipped metrics, in report order.
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(m.family for m in METRICS))
BY_NAME: dict[str, MetricSpec] = REGISTRY.by_name
# Every metric a run scores when it selects none: every metric but the opt-in ones.
METRIC_NAMES: tuple[str, ...] = REGISTRY.names
ALL_METRIC_NAMES: tuple[str, ...] = REGISTRY.all_names


def spec(name: str) -> MetricSpec | None:
    """The declaration of ``name``; a name with a cut-off (``@N``) is its metric's."""
    return REGISTRY.spec(name)


def higher_is_better(name: str) -> bool:
    """A metric's direction; unknown (e.g. newer) metrics read as higher is better."""
    return REGISTRY.higher_is_better(name)


def metric_order(names: Iterable[str]) -> list[str]:
    """``names`` in registry order (``x@N`` right after ``x``), then any unknown names sorted."""
    return REGISTRY.order(names)


def select_metrics(patterns: Sequence[str] | None) -> tuple[str, ...]:
    """The shipped metrics matched by names or shell-style patterns (``Registry.select``)."""
    return REGISTRY.select(patterns)


def registry_markdown() -> str:
    """The registry as the Markdown table in docs/metrics.md (a test keeps them equal)."""
    lines = [
        "| metric | family | better | judge | needs | what it measures |",
        "|---|---|---|---|---|---|",
    ]
    for m in METRICS:
        lines.append(
            f"| `{m.name}` | {m.family} | {'higher' if m.higher_is_better else 'lower'} | "
            f"{m.judge} | {', '.join(m.needs)} | {m.description} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(registry_markdown())
