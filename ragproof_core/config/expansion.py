"""``${NAME}`` in a config string: a value read from the environment when the run starts
(CONTRACT section 28), and the run's secret values, which its masker writes as ``***``.

Any string value of ragproof.toml (to any depth, keys aside: ``[run]``, its name and
tags included, ``[adapter]`` and its options, ``[judge]``, ``[[metric]]``, ``[traces]``)
may name environment variables as ``${NAME}``; ``$${`` writes a literal ``${``. A key
whose value must be one of a known set of words (``run.source_match``, a metric's name,
a function's target) is checked as written when the file loads, so ``${NAME}`` there is
refused as any unknown word is.
They are expanded when the run starts (``expanded``), in the process that builds the
adapter or the judge, never earlier: the config as stored and shown, and its digest,
keep ``${NAME}`` as written, so a rotated token changes neither. Before a run exists,
``check_environment`` refuses a variable that is not set with one line naming the key
and the variable (``ragproof.toml: adapter.options.headers.Authorization: environment
variable SERVICE_TOKEN is not set``). No other way to read the environment exists.

A run's secret values (``run_secrets``) are every value expanded from ``${NAME}``;
every environment variable whose name is a secret's name (``masking.is_secret_key``);
every value under a secret-named key of the config; every URL password and query value
in it. ``masking.Masker`` drops the ones shorter than 6 characters.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ragproof_core.config.redaction import find_urls
from ragproof_core.config.settings import Config, ConfigError
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


def names_variables(text: str) -> bool:
    """Whether ``text`` names an environment variable (``$${`` alone names none)."""
    return any(match.group(1) for match in _REFERENCE.finditer(text))


def expand_path(path: str, key: str, environ: Mapping[str, str] | None = None) -> str:
    """A launch's file path (a suite's ``dataset`` or ``config_file``) as the run opens
    it, ``${NAME}`` expanded; ``ConfigError`` naming ``key`` for a variable not set."""
    return expand_text(path, os.environ if environ is None else environ, key)[0]


def path_values(*paths: str | None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The values ``${NAME}`` gives a launch's paths: secrets of the run like any other
    expanded value (``ConfigError`` for a variable not set)."""
    environ = os.environ if environ is None else environ
    return [value for path in paths if path for value in expand_text(path, environ, "")[1]]


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


def _expand_table(table: Any, environ: Mapping[str, str], where: str, found: list[str]) -> Any:
    """A table (a dataclass) with every string value expanded, validated again as the
    file's was (a value that is bad once expanded is refused naming its key); the same
    object when it names nothing."""
    changes = {}
    for field in dataclasses.fields(table):
        value = getattr(table, field.name)
        done = _expand(value, environ, f"{where}.{field.name}", found)
        if done != value:
            changes[field.name] = done
    return dataclasses.replace(table, **changes) if changes else table


def expanded(config: Config, environ: Mapping[str, str] | None = None) -> Expanded:
    """``config`` with ``${NAME}`` expanded in every string value of its tables (keys
    aside; a floor of ``[gate]`` holds none): ``[run]`` (its name and tags too),
    ``[adapter]`` and its options, ``[judge]``, each ``[[metric]]`` table and
    ``[traces]``. ``ConfigError`` (``SOURCE: KEY: environment variable NAME is not set``)
    for the first variable that is not set, or naming the key whose expanded value the
    settings refuse (the values masked)."""
    environ = os.environ if environ is None else environ
    found: list[str] = []
    try:
        tables = {
            "run": _expand_table(config.run, environ, "run", found),
            "adapter": _expand_table(config.adapter, environ, "adapter", found),
            "judge": _expand_table(config.judge, environ, "judge", found),
            "metrics": tuple(
                _expand_table(table, environ, f"metric[{number}]", found)
                for number, table in enumerate(config.metrics, start=1)
            ),
            "traces": _expand_table(config.traces, environ, "traces", found),
        }
        written = (config.run, config.adapter, config.judge, config.traces, *config.metrics)
        used = (tables["run"], tables["adapter"], tables["judge"], tables["traces"])
        if all(a is b for a, b in zip((*used, *tables["metrics"]), written, strict=True)):
            return Expanded(config, ())  # nothing named, no $${: the config as it is
        return Expanded(dataclasses.replace(config, **tables), tuple(found))
    except (ConfigError, ValueError) as exc:
        # A refused value is shown as ***, as everything the run's masker sees is.
        reason = Masker(found).text(str(exc))
        raise ConfigError(f"{config.source}: {reason}" if config.source else reason) from None


def check_environment(config: Config, environ: Mapping[str, str] | None = None) -> None:
    """Every ``${NAME}`` the config names is set (``expanded``'s error otherwise)."""
    expanded(config, environ)


def run_secrets(
    config: Config, environ: Mapping[str, str] | None = None, launched: Iterable[str] = ()
) -> list[str]:
    """The run's secret values (the module docstring), from the config as written;
    ``launched``: the values its launch's paths read (``path_values``)."""
    environ = os.environ if environ is None else environ
    done = expanded(config, environ)
    return [
        *done.values,
        *launched,
        *environment_secrets(environ),
        *config_secrets(_as_data(done.config)),
    ]


def _as_data(config: Config) -> dict[str, Any]:
    """The config's tables as plain data, keyed as the file keys them."""
    return {
        "run": dataclasses.asdict(config.run),
        "adapter": dataclasses.asdict(config.adapter),
        "judge": dataclasses.asdict(config.judge),
        "metric": [dataclasses.asdict(table) for table in config.metrics],
        "traces": dataclasses.asdict(config.traces),
    }


def run_masker(
    config: Config, environ: Mapping[str, str] | None = None, launched: Iterable[str] = ()
) -> Masker:
    """The masker of a run with this config (``run_secrets``), in this environment."""
    return Masker(run_secrets(config, environ, launched))


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
