"""The metric registry: every metric ragproof ships, declared once.

Everything that lists metrics derives from ``METRICS``: the evaluation's
scoring order, the summary order, compare's directions, the ``metrics`` SQL
view, the command line's list of names, metric selection and the docs table.
A metric's name string lives in its own module (next to the code that puts it
on results); this module is the one list of them.

``default`` says whether a run with no ``metrics`` selection scores it; the
trec_eval measures of CONTRACT section 19 are scored only when named, so a run
that names nothing reports exactly what it always did. ``cutoff`` names the run
setting that cuts the metric's ranking (``k``): only those metrics, and only
deterministic ones, take a per-metric cut-off ``@N`` (``metrics.cutoff``).

``needs`` says what a case must bring for the metric to be computed (anything
missing makes the case skip with a reason); ``judge`` says whether the metric
needs a judge (``required``), uses one when configured and otherwise falls
back to a heuristic (``optional``), or never asks one (``never``).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragproof_core.metrics.citation import CITATION_VALIDITY
from ragproof_core.metrics.context_relevance import CONTEXT_RELEVANCE, JUDGED_NDCG_AT_K
from ragproof_core.metrics.cutoff import split_cutoff
from ragproof_core.metrics.echo import EXACT_MATCH
from ragproof_core.metrics.generation import (
    ANSWER_RELEVANCE,
    CITATION_SUPPORT,
    COMPLETENESS,
    GROUNDEDNESS,
)
from ragproof_core.metrics.retrieval import (
    BPREF,
    HIT_RATE_AT_K,
    JUDGED_AT_K,
    MAP,
    MRR,
    NDCG_AT_K,
    PRECISION_AT_K,
    R_PRECISION,
    RECALL_AT_K,
)
from ragproof_core.metrics.robustness import ABSTENTION, INJECTION_RESISTANCE, OVERREFUSAL

FAMILIES: tuple[str, ...] = ("retrieval", "generation", "echo", "robustness")
JUDGE_MODES: tuple[str, ...] = ("never", "optional", "required")


class MetricSelectionError(ValueError):
    """A metric name or pattern that matches no metric; the message lists them all."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    higher_is_better: bool
    judge: str  # one of JUDGE_MODES
    needs: tuple[str, ...]
    description: str
    default: bool = True
    cutoff: str | None = None

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def judged(self) -> bool:
        """True when the score comes from a judge whenever one is configured."""
        return self.judge != "never"


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        PRECISION_AT_K,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "hits in the top k / k",
        cutoff="k",
    ),
    MetricSpec(
        RECALL_AT_K,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "hits in the top k / number of expected sources",
        cutoff="k",
    ),
    MetricSpec(
        MRR,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "1 / rank of the first expected source",
    ),
    MetricSpec(
        NDCG_AT_K,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "nDCG over the top k, the grades as gains (binary on a list of ids)",
        cutoff="k",
    ),
    MetricSpec(
        MAP,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "average precision over the whole ranking (trec_eval map)",
        default=False,
    ),
    MetricSpec(
        R_PRECISION,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "relevant ids in the top R / R, R the relevant ids (trec_eval Rprec)",
        default=False,
    ),
    MetricSpec(
        HIT_RATE_AT_K,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "1 when a relevant id is in the top k (trec_eval success_k)",
        default=False,
        cutoff="k",
    ),
    MetricSpec(
        BPREF,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "relevant ids ranked above judged non-relevant ones (trec_eval bpref)",
        default=False,
    ),
    MetricSpec(
        JUDGED_AT_K,
        True,
        "never",
        ("retrieval", "expected_source_ids"),
        "ids in the top k that carry a grade / k (ir_measures Judged@k)",
        default=False,
        cutoff="k",
    ),
    MetricSpec(
        CONTEXT_RELEVANCE,
        True,
        "required",
        ("retrieval",),
        "judged top-k chunks: relevant 1, partial 0.5, irrelevant 0 (mean)",
    ),
    MetricSpec(
        JUDGED_NDCG_AT_K,
        True,
        "required",
        ("retrieval",),
        "nDCG over the top k with the judged gains 1 / 0.5 / 0",
    ),
    MetricSpec(
        CITATION_VALIDITY,
        True,
        "never",
        ("answer", "citations"),
        "share of cited ids found in the retrieved set",
    ),
    MetricSpec(
        GROUNDEDNESS,
        True,
        "required",
        ("answer", "context"),
        "supported claims / claims",
    ),
    MetricSpec(
        CITATION_SUPPORT,
        True,
        "required",
        ("answer", "context", "citations"),
        "cited chunks that support the answer / cited chunks",
    ),
    MetricSpec(
        ANSWER_RELEVANCE,
        True,
        "required",
        ("answer",),
        "relevant 1, partial 0.5, irrelevant 0",
    ),
    MetricSpec(
        COMPLETENESS,
        True,
        "required",
        ("answer", "expected_answer"),
        "complete 1, partial 0.5, missing 0",
    ),
    MetricSpec(
        EXACT_MATCH,
        True,
        "never",
        ("answer", "expected_answer"),
        "answer equals the expected answer after stripping (debugging)",
    ),
    MetricSpec(
        INJECTION_RESISTANCE,
        True,
        "never",
        ("answer", "injection case"),
        "1 when the answer did not emit the payload's sentinel",
    ),
    MetricSpec(
        ABSTENTION,
        True,
        "optional",
        ("answer", "unanswerable case"),
        "1 when the pipeline declined an unanswerable question",
    ),
    MetricSpec(
        OVERREFUSAL,
        False,
        "optional",
        ("answer", "qa case"),
        "1 when the pipeline refused an answerable question (lower is better)",
    ),
)

BY_NAME: dict[str, MetricSpec] = {spec.name: spec for spec in METRICS}
# Every metric a run scores when it selects none: every metric but the opt-in ones.
METRIC_NAMES: tuple[str, ...] = tuple(spec.name for spec in METRICS if spec.default)
ALL_METRIC_NAMES: tuple[str, ...] = tuple(spec.name for spec in METRICS)
_RANK = {name: rank for rank, name in enumerate(ALL_METRIC_NAMES)}


def spec(name: str) -> MetricSpec | None:
    """The declaration of ``name``; a name with a cut-off (``@N``) is its metric's."""
    return BY_NAME.get(split_cutoff(name)[0])


def higher_is_better(name: str) -> bool:
    """A metric's direction; unknown (e.g. newer) metrics read as higher is better."""
    found = spec(name)
    return True if found is None else found.higher_is_better


def _order_key(name: str) -> tuple[int, int, str]:
    base, cutoff = split_cutoff(name)
    # A cut-off variant sits right after its metric at run.k, by cut-off.
    return _RANK.get(base, len(_RANK)), -1 if cutoff is None else cutoff, name


def metric_order(names: Iterable[str]) -> list[str]:
    """``names`` in registry order (``x@N`` right after ``x``), then any unknown names sorted."""
    present = set(names)
    known = sorted((name for name in present if spec(name) is not None), key=_order_key)
    return known + sorted(name for name in present if spec(name) is None)


def _with_cutoff(name: str, cutoff: int) -> str:
    """``name`` (``metric@N`` as written) checked: the metric exists, has a cut-off and
    is deterministic, and N >= 1."""
    base = split_cutoff(name)[0]
    found = BY_NAME.get(base)
    if found is None:
        close = difflib.get_close_matches(base, ALL_METRIC_NAMES, n=1)
        hint = f" (did you mean {close[0] + '@' + str(cutoff)!r}?)" if close else ""
        raise MetricSelectionError(f"metric {name!r} matches no metric{hint}")
    if found.cutoff is None or found.judged:
        with_cutoffs = ", ".join(m.name for m in METRICS if m.cutoff and not m.judged)
        raise MetricSelectionError(
            f"metric {name!r}: {base} has no cut-off to set; @N applies to {with_cutoffs}"
        )
    if cutoff < 1:
        raise MetricSelectionError(f"metric {name!r}: the cut-off must be at least 1")
    return f"{base}@{cutoff}"


def select_metrics(patterns: Sequence[str] | None) -> tuple[str, ...]:
    """The metrics matched by names or shell-style patterns, in registry order.

    ``None`` or an empty list selects every default metric. A pattern matches
    the default metrics; an opt-in metric (``default=False``) is selected by its
    exact name. ``metric@N`` selects a deterministic metric with a cut-off at N
    (listed right after the metric itself). A name or pattern that matches
    nothing raises ``MetricSelectionError`` listing every metric, with the
    closest name when there is one.
    """
    if not patterns:
        return METRIC_NAMES
    chosen: set[str] = set()
    for raw in patterns:
        pattern = raw.strip()
        base, cutoff = split_cutoff(pattern)
        if cutoff is not None:
            chosen.add(_with_cutoff(pattern, cutoff))
            continue
        if pattern in BY_NAME:
            chosen.add(pattern)
            continue
        matched = [name for name in METRIC_NAMES if fnmatch.fnmatchcase(name, pattern)]
        if not matched:
            close = difflib.get_close_matches(pattern, ALL_METRIC_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise MetricSelectionError(
                f"metric {pattern!r} matches no metric{hint}; metrics: {', '.join(METRIC_NAMES)}"
            )
        chosen.update(matched)
    return tuple(metric_order(chosen))


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
