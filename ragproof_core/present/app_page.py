"""Render one page of the results browser (``ragproof serve``, CONTRACT section 22).

The same safety as the report (``html.py``): the markup holds no stored
text; the page's data travels as inert JSON and the page's one script
(``static/app.js``) builds the DOM with ``textContent`` only. The
Content-Security-Policy allows that script by hash and, unlike the
self-contained report, requests to the app's own origin: the labelling page
posts its labels there, and links and the search form stay on it.
"""

from __future__ import annotations

import html
from typing import Any

from ragproof_core.present.html import (
    embed_json,
    fill_template,
    page_script,
    script_hash,
    static_text,
)

PAGES = ("runs", "run", "trends", "compare", "cases", "case", "label", "problem")


def app_script() -> str:
    return page_script("app.js")


def app_content_security_policy() -> str:
    """The policy of every app page (sent as a header too, where frame-ancestors works)."""
    return (
        f"default-src 'none'; script-src '{script_hash(app_script())}'; "
        "style-src 'unsafe-inline'; img-src 'none'; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'"
    )


def render_app_page(page: str, title: str, data: dict[str, Any]) -> str:
    """The HTML of app page ``page`` (one of ``PAGES``) showing ``data``."""
    if page not in PAGES:
        raise ValueError(f"unknown page {page!r}")
    if "page" in data:
        # The script picks the page by data.page: a data key of that name would hide it.
        raise ValueError("page data may not hold a key named 'page'")
    fields = {
        "TITLE": html.escape(title),
        "CSP": html.escape(app_content_security_policy(), quote=False).replace('"', "&quot;"),
        "STYLE": static_text("report.css") + static_text("app.css"),
        "DATA": embed_json({"page": page, **data}),
        "SCRIPT": app_script(),
    }
    return fill_template("app.html", fields)
