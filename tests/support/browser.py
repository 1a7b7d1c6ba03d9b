"""Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by Playwright.

Playwright cannot download its own browser here, so it launches the system
one (`apt-get install chromium`; scripts/test installs it when missing and
root). Without it the browser tests are skipped with ``missing_reason()``
(tests/browser/conftest.py). The pinned playwright (pyproject's dev extra)
drives that Chromium's version.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

CHROMIUM = os.environ.get("RAGPROOF_CHROMIUM", "/usr/bin/chromium")
# The one command that enables the browser tests; scripts/test prints the same.
ENABLE = "sudo apt-get install -y chromium (or set RAGPROOF_CHROMIUM)"


def missing_reason() -> str | None:
    """Why the browser tests cannot run here, or None when Chromium is there."""
    if os.access(CHROMIUM, os.X_OK):
        return None
    return f"no Chromium at {CHROMIUM}: the browser tests are skipped; to run them: {ENABLE}"


@contextmanager
def chromium() -> Iterator:
    from playwright.sync_api import sync_playwright

    reason = missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    with sync_playwright() as p:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
