"""Where the results browser (`ragproof serve`, CONTRACT section 22) shows a run.

With ``RAGPROOF_SERVE_URL`` set, a run's page is ``{RAGPROOF_SERVE_URL}/runs/{run_id}``
and its HTML report ``{RAGPROOF_SERVE_URL}/runs/{run_id}/report``: the Dagster
UI links both. Without it there is nothing a browser can open from the UI (it
will not follow ``file://`` links), so the report's location is shown as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

SERVE_URL_ENV = "RAGPROOF_SERVE_URL"


@dataclass(frozen=True, slots=True)
class RunLinks:
    page: str
    report: str


def served_run_links(serve_url: str | None, run_id: str) -> RunLinks | None:
    """The run's page and report in the results browser; None unless an http(s) URL is set."""
    base = (serve_url or "").strip().rstrip("/")
    if urlsplit(base).scheme not in ("http", "https"):
        return None
    page = f"{base}/runs/{quote(run_id, safe='')}"
    return RunLinks(page=page, report=f"{page}/report")
