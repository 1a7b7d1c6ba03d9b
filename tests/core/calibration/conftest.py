"""Calibration asks the local judge server like the judge tests do."""

from tests.core.judge.conftest import _server, litellm, server  # noqa: F401 - fixtures
