"""The page's safety by construction: inert embedded JSON, a CSP that pins the one script."""

import json
import re

from ragproof_core.present.html import (
    content_security_policy,
    embed_json,
    render_html,
    script_hash,
)

HOSTILE = "</script><script>alert(1)</script><!-- <img src=x onerror=alert(2)> & \u2028"


def minimal(answer: str) -> dict:
    return {"run": {"run_id": "r1"}, "answer": answer}


def test_embedded_json_cannot_close_its_script_element_and_reads_back_exactly():
    text = embed_json(minimal(HOSTILE))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == minimal(HOSTILE)


def test_the_page_holds_hostile_text_only_inside_the_json_block():
    page = render_html(minimal(HOSTILE))
    assert page.count("<script") == 2  # the data block and the page's own script
    assert "alert(1)" in page  # present, as escaped JSON ...
    assert "<script>alert(1)" not in page and "<img" not in page  # ... never as markup
    data = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', page, re.S)
    assert json.loads(data.group(1))["answer"] == HOSTILE


def test_csp_forbids_the_network_and_allows_exactly_the_inline_script():
    page = render_html(minimal("x"))
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    csp = content_security_policy(script)
    assert csp == (
        f"default-src 'none'; script-src '{script_hash(script)}'; style-src 'unsafe-inline'; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    assert f'content="{csp}"' in page
    # The page's own script never writes markup from data.
    assert "innerHTML" not in script.replace("never assigns\n// innerHTML", "")


def test_title_is_escaped():
    page = render_html({"run": {"run_id": "<b>r</b>"}})
    assert "<title>ragproof report: &lt;b&gt;r&lt;/b&gt;</title>" in page
