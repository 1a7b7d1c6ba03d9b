"""Render the report's data into one self-contained HTML page.

Safety with hostile text (answers, chunks and judge replies come from systems
under test): the page's markup holds no case text at all. Data travels as
JSON inside ``<script type="application/json">`` with ``<``, ``>`` and ``&``
escaped as ``\\u003c``, ``\\u003e`` and ``\\u0026``, so no string can close the
script element; the page's own script builds the DOM with ``textContent``
only. A Content-Security-Policy forbids every network fetch and allows only
the page's own script, by hash, so even markup that slipped through would
neither run nor load anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from ragproof_core.store import files

_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


def static_text(name: str) -> str:
    """A file of ``present/static`` (the pages' template, style and scripts)."""
    return resources.files("ragproof_core.present").joinpath("static", name).read_text("utf-8")


def page_script(name: str) -> str:
    """A page's one script: the shared DOM helpers (``dom.js``), then its own."""
    return static_text("dom.js") + "\n" + static_text(name)


def fill_template(name: str, fields: dict[str, str]) -> str:
    """Template ``name`` with each ``{{FIELD}}`` replaced in one pass: text inserted
    for one field is never rescanned."""
    return _PLACEHOLDER.sub(lambda m: fields[m.group(1)], static_text(name))


def embed_json(data: Any) -> str:
    """JSON that is inert inside an HTML ``<script>`` element (and valid JSON)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()


def content_security_policy(script: str) -> str:
    # default-src 'none' also covers connect, img, font, media, frame and worker.
    return (
        f"default-src 'none'; script-src '{script_hash(script)}'; style-src 'unsafe-inline'; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )


def render_html(data: dict[str, Any]) -> str:
    script = page_script("report.js")
    fields = {
        "TITLE": html.escape(f"ragproof report: {data['run']['run_id']}"),
        # In a double-quoted attribute: single quotes stay readable, " would be escaped.
        "CSP": html.escape(content_security_policy(script), quote=False).replace('"', "&quot;"),
        "STYLE": static_text("report.css"),
        "DATA": embed_json(data),
        "SCRIPT": script,
    }
    return fill_template("template.html", fields)


def write_html(path: Path, data: dict[str, Any]) -> Path:
    """Render and write atomically; a reader never sees half a report."""
    text = render_html(data)
    with files.atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
