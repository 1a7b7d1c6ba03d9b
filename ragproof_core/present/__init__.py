"""What the user sees: the run summary, the per-run HTML report (CONTRACT
section 10), the compare Markdown and the judge activity tables.

``summary`` renders a run's summary for the terminal, Dagster and JSON;
``report_data`` gathers one run (and optionally a baseline) from the store into
a plain JSON-ready dict; ``html`` renders that dict into one self-contained
page; ``markdown`` holds the small Markdown views Dagster shows. No module here
imports Dagster.

What the other layers use is exported here; modules inside the package import
each other directly.
"""

from ragproof_core.present.app_data import (
    OTHER_RUNS,
    RUNS_PAGE,
    compare_data,
    datasets,
    run_data,
    run_page_data,
    runs_data,
    runs_page_data,
)
from ragproof_core.present.app_page import (
    app_content_security_policy,
    render_app_page,
)
from ragproof_core.present.case_search import (
    ORDERS,
    SORT_COLUMNS,
    STATUSES,
    CaseQuery,
    search_cases,
)
from ragproof_core.present.case_text import (
    case_text,
)
from ragproof_core.present.compare_markdown import (
    render_markdown,
)
from ragproof_core.present.html import (
    render_html,
    write_html,
)
from ragproof_core.present.judge_activity import (
    agreement_lines,
    judge_failures_line,
    judge_usage_markdown,
    judge_usage_table,
)
from ragproof_core.present.label_page import (
    LabelSession,
    label_page_data,
    label_tally,
    verdict,
)
from ragproof_core.present.links import (
    SERVE_URL_ENV,
    served_run_links,
)
from ragproof_core.present.markdown import (
    distributions_markdown,
    distributions_table,
    worst_cases_markdown,
)
from ragproof_core.present.report_data import (
    CaseNotFound,
    MixedJudgesError,
    gather_case,
    gather_report,
    stored_diagnosis,
)
from ragproof_core.present.run_filters import (
    chosen_filters,
)
from ragproof_core.present.run_list import (
    identity_line,
    run_dict,
    runs_table,
)
from ragproof_core.present.summary import (
    calibration_json,
    calibration_table,
    hidden_note,
    latency_note,
    refusal_tradeoff,
    run_json,
    summary_markdown,
    summary_table,
)
from ragproof_core.present.trends import (
    TREND_RUNS,
    MetricMoments,
    dataset_trends,
    run_moments,
    trend_page,
    trend_window,
)

__all__ = [
    "OTHER_RUNS",
    "RUNS_PAGE",
    "CaseNotFound",
    "CaseQuery",
    "LabelSession",
    "MetricMoments",
    "MixedJudgesError",
    "ORDERS",
    "SERVE_URL_ENV",
    "SORT_COLUMNS",
    "STATUSES",
    "agreement_lines",
    "app_content_security_policy",
    "calibration_json",
    "calibration_table",
    "chosen_filters",
    "case_text",
    "compare_data",
    "dataset_trends",
    "trend_page",
    "trend_window",
    "TREND_RUNS",
    "datasets",
    "distributions_markdown",
    "distributions_table",
    "gather_case",
    "gather_report",
    "hidden_note",
    "judge_failures_line",
    "identity_line",
    "judge_usage_markdown",
    "judge_usage_table",
    "label_page_data",
    "label_tally",
    "latency_note",
    "refusal_tradeoff",
    "render_app_page",
    "render_html",
    "render_markdown",
    "run_data",
    "run_page_data",
    "run_dict",
    "run_json",
    "run_moments",
    "runs_data",
    "runs_page_data",
    "runs_table",
    "search_cases",
    "served_run_links",
    "stored_diagnosis",
    "summary_markdown",
    "summary_table",
    "verdict",
    "worst_cases_markdown",
    "write_html",
]
