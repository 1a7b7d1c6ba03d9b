"""The results browser's page shell: hostile data inert, the page's script allowed by hash."""

import re

import pytest

from ragproof_core.present.app_page import (
    app_content_security_policy,
    app_script,
    render_app_page,
)
from ragproof_core.present.html import script_hash

HOSTILE = '</script><script>alert(1)</script><img src=x onerror="alert(2)">&amp;\u2028'


def test_stored_text_never_becomes_markup():
    page = render_app_page("runs", f"runs {HOSTILE}", {"runs": [{"dataset": HOSTILE}]})
    # One closing tag for each of the two scripts: the data block and the page's own.
    assert page.count("</script>") == 2
    assert "<img" not in page and 'onerror="alert' not in page
    assert "\\u003c/script\\u003e" in page
    assert "<title>runs &lt;/script&gt;" in page


def test_the_policy_allows_the_pages_script_and_the_apps_own_origin_only():
    csp = app_content_security_policy()
    assert csp.startswith(f"default-src 'none'; script-src '{script_hash(app_script())}';")
    assert "connect-src 'self'" in csp and "form-action 'self'" in csp
    assert "img-src 'none'" in csp
    page = render_app_page("label", "x", {})
    meta = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert meta.replace("&#x27;", "'") == csp


def test_an_unknown_page_is_refused():
    with pytest.raises(ValueError, match="unknown page"):
        render_app_page("admin", "x", {})


def test_page_data_cannot_hide_the_pages_name():
    # The runs page's paging once rode under "page" and replaced the page's name:
    # the page's script found no page to draw.
    with pytest.raises(ValueError, match="key named 'page'"):
        render_app_page("runs", "x", {"page": {"offset": 0}})
