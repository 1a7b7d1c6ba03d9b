"""Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by Playwright.

Playwright cannot download its own browser here, so it launches the system
one (`apt-get install chromium`; .ci/run installs it when missing). The
pinned playwright (pyproject's dev extra) drives that Chromium's version.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

CHROMIUM = os.environ.get("RAGPROOF_CHROMIUM", "/usr/bin/chromium")


@contextmanager
def chromium() -> Iterator:
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        raise RuntimeError(
            f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set RAGPROOF_CHROMIUM)"
        )
    with sync_playwright() as p:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
