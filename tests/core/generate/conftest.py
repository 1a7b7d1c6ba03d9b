"""The judge tests' server and LiteLLM fixtures, shared with the generation tests."""

from tests.core.judge.conftest import _server, litellm, server  # noqa: F401
