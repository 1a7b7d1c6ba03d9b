"""``${NAME}`` in a config string: a value read from the environment when the run starts
(CONTRACT section 28), and the run's secret values, which its masker writes as ``***``.

Any string of the adapter's options (to any depth, keys aside) and of the ``[judge]``
table may name environment variables as ``${NAME}``; ``$${`` writes a literal ``${``.
They are expanded when the run starts (``expanded``), in the process that builds the
adapter or the judge, never earlier: the config as stored and shown, and its digest,
keep ``${NAME}`` as written, so a rotated token changes neither. Before a run exists,
``check_environment`` refuses a variable that is not set with one line naming the key
and the variable (``ragproof.toml: adapter.options.headers.Authorization: environment
variable SERVICE_TOKEN is not set``). No other way to read the environment exists.

A run's secret values (``run_secrets``) are every value expanded from ``${NAME}``;
every environment variable whose name is a secret's name (``masking.is_secret_key``);
every value under a secret-named key of the adapter's options; every URL password and
query value in them. ``masking.Masker`` drops the ones shorter than 6 characters.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ragproof_core.config.redaction import find_urls
from ragproof_core.config.settings import AdapterSpec, Config, ConfigError
from ragproof_core.errors import show_key
from ragproof_core.masking import Masker, environment_secrets, is_secret_key

# "$${" (a literal "${"), or "${NAME}" with NAME a shell variable's name.
_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_text(text: str, environ: Mapping[str, str], where: str = "") -> tuple[str, list[str]]:
    """``text`` with each ``${NAME}`` replaced by its value and ``$${`` by ``${``, and the
    values put in; ``ConfigError`` naming ``where`` for a variable that is not set."""
    if "${" not in text:
        return text, []
    values: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "${"
        if name not in environ:
            raise ConfigError(f"{where}: environment variable {name} is not set")
        values.append(environ[name])
        return environ[name]

    return _REFERENCE.sub(replace, text), values


def _expand(value: Any, environ: Mapping[str, str], where: str, found: list[str]) -> Any:
    if isinstance(value, str):
        text, values = expand_text(value, environ, where)
        found.extend(values)
        return text
    if isinstance(value, Mapping):
        return {
            key: _expand(item, environ, f"{where}.{show_key(str(key))}", found)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(
            _expand(item, environ, f"{where}[{index}]", found) for index, item in enumerate(value)
        )
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class Expanded:
    """A config as the run uses it (``config``), and the values ``${NAME}`` gave it."""

    config: Config
    values: tuple[str, ...]


def expanded(config: Config, environ: Mapping[str, str] | None = None) -> Expanded:
    """``config`` with ``${NAME}`` expanded in the adapter's options and the judge's
    models; ``ConfigError`` (``SOURCE: KEY: environment variable NAME is not set``)
    for the first variable that is not set."""
    environ = os.environ if environ is None else environ
    found: list[str] = []
    try:
        options = _expand(dict(config.adapter.options), environ, "adapter.options", found)
        models = _expand(tuple(config.judge.models), environ, "judge.models", found)
    except ConfigError as exc:
        raise ConfigError(f"{config.source}: {exc}" if config.source else str(exc)) from None
    if options == config.adapter.options and models == tuple(config.judge.models):
        return Expanded(config, ())  # nothing named: the config as it is
    return Expanded(
        dataclasses.replace(
            config,
            adapter=AdapterSpec(config.adapter.target, options),
            judge=dataclasses.replace(config.judge, models=models),
        ),
        tuple(found),
    )


def check_environment(config: Config, environ: Mapping[str, str] | None = None) -> None:
    """Every ``${NAME}`` the config names is set (``expanded``'s error otherwise)."""
    expanded(config, environ)


def run_secrets(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """The run's secret values (the module docstring), from the config as written."""
    environ = os.environ if environ is None else environ
    done = expanded(config, environ)
    return [
        *done.values,
        *environment_secrets(environ),
        *config_secrets(done.config.adapter.options),
    ]


def run_masker(config: Config, environ: Mapping[str, str] | None = None) -> Masker:
    """The masker of a run with this config (``run_secrets``), in this environment."""
    return Masker(run_secrets(config, environ))


def config_secrets(value: Any, secret: bool = False) -> Iterator[str]:
    """Every string under a secret-named key, and every URL password and query value."""
    if isinstance(value, str):
        if secret:
            yield value
        yield from url_secrets(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from config_secrets(item, secret or is_secret_key(str(key)))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from config_secrets(item, secret)


def url_secrets(text: str) -> Iterator[str]:
    """The passwords (a lone user name too: a token) and query values of the URLs in ``text``."""
    for url in find_urls(text):
        try:
            parts = urlsplit(url)
        except ValueError:  # not a URL after all (an unclosed IPv6 bracket)
            continue
        if parts.password:
            yield parts.password
        elif parts.username:
            yield parts.username
        yield from (value for _, value in parse_qsl(parts.query, keep_blank_values=False))
