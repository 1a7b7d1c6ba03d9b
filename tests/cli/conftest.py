"""The command-line tests share the asset tests' judge server and stores."""

from tests.assets.conftest import judge_env, regression_fixture, server  # noqa: F401 - fixtures
