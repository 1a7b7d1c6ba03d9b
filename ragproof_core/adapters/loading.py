"""Build the adapter named in the config: ``package.module:Name`` plus keyword options.

``Name`` is a class or a factory (any callable); it is called with the
``[adapter] options`` table as keyword arguments. ``Name`` may be a dotted
attribute path (``module:Outer.build``). The module is imported from
``sys.path`` as it stands; this function does not add the working directory.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ragproof_core.adapters.escapes import exception_text, must_propagate
from ragproof_core.adapters.isolation import IsolatedAdapter, needs_isolation
from ragproof_core.errors import UserError


class AdapterLoadError(UserError, ValueError):
    """The adapter could not be built; the message says which step failed and why."""


def resolve_target(target: str, label: str = "adapter target") -> Any:
    """Import ``package.module:Name`` and return the callable it names.

    ``label`` starts every error message ("adapter target", "factory"), so the
    user can tell which config key held the bad path.
    """
    module_name, sep, attr_path = target.partition(":")
    if not sep or not module_name.strip() or not attr_path.strip() or ":" in attr_path:
        raise AdapterLoadError(f"{label} {target!r} must look like 'package.module:Name'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Distinguish "the module named in the target does not exist" from "it
        # exists but one of its own imports is missing": the fixes differ.
        if exc.name is not None and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            raise AdapterLoadError(f"{label} {target!r}: no module named {exc.name!r}") from exc
        raise AdapterLoadError(
            f"{label} {target!r}: importing {module_name!r} failed: ModuleNotFoundError: {exc}"
        ) from exc
    except BaseException as exc:  # noqa: BLE001 - a module calling sys.exit() is bad input too
        if must_propagate(exc):
            raise
        raise AdapterLoadError(
            f"{label} {target!r}: importing {module_name!r} failed: {exception_text(exc)}"
        ) from exc

    factory: Any = module
    for part in attr_path.split("."):
        try:
            factory = getattr(factory, part)
        except AttributeError:
            raise AdapterLoadError(
                f"{label} {target!r}: module {module_name!r} has no attribute {attr_path!r}"
            ) from None
    if not callable(factory):
        raise AdapterLoadError(
            f"{label} {target!r} is a {type(factory).__name__}, not a class or factory to call"
        )
    return factory


def load_adapter(target: str, options: Mapping[str, Any], *, prechecked: bool = False) -> object:
    """Import ``target``, call it with ``**options`` and check the result has ``answer()``.

    ``prechecked``: the run's preflight already built this adapter once (and so
    validated its input). A class whose construction validates a large input
    may offer a ``prechecked(**options)`` classmethod that skips that work
    (``RecordedAdapter.prechecked``); it is used when present.
    """
    factory = resolve_target(target)
    if prechecked and callable(getattr(factory, "prechecked", None)):
        factory = factory.prechecked
    try:
        adapter = factory(**dict(options))
    except AdapterLoadError as exc:
        # Shipped adapters (e.g. RecordedAdapter) already phrase PATH:LINE: reason.
        raise AdapterLoadError(f"building adapter {target!r} failed: {exc}") from exc
    except BaseException as exc:  # noqa: BLE001 - a constructor's sys.exit() is bad input
        if must_propagate(exc):
            raise
        raise AdapterLoadError(
            f"building adapter {target!r} failed: {exception_text(exc)}"
        ) from exc
    if not callable(getattr(adapter, "answer", None)):
        raise AdapterLoadError(
            f"adapter {target!r} built a {type(adapter).__name__} without an answer() method"
        )
    return IsolatedAdapter(adapter) if needs_isolation(adapter) else adapter


# What ``close_adapter`` calls; a lent adapter has neither, as far as the run can see.
_CLOSERS = ("aclose", "close")


class LentAdapter:
    """An adapter object its caller built and keeps using (``ragproof.evaluate(adapter=
    pipeline)`` in a notebook): the run calls it like any adapter, but closing it is the
    caller's business, so ``aclose`` and ``close`` are hidden from the run."""

    def __init__(self, adapter: object) -> None:
        self.adapter = adapter

    def __getattr__(self, name: str) -> Any:  # only for names not set in __init__
        if name in _CLOSERS:
            raise AttributeError(name)
        return getattr(self.adapter, name)

    def __repr__(self) -> str:
        return repr(self.adapter)


def object_target(adapter: object) -> str:
    """The ``package.module:Name`` a run of an adapter object records: its class's."""
    kind = type(adapter)
    return f"{kind.__module__}:{kind.__qualname__}"


def lend_adapter(adapter: object) -> object:
    """``adapter``, an object built by the caller, as a run uses it: checked as
    ``load_adapter`` checks what it builds (``AdapterLoadError`` without ``answer()``),
    left open by the run (``LentAdapter``), its async methods isolated as a built
    adapter's are."""
    if isinstance(adapter, type):
        raise AdapterLoadError(
            f"adapter: {adapter.__qualname__} is a class; give an object of it "
            f"({adapter.__qualname__}(...)) or its import path 'package.module:Name'"
        )
    if not callable(getattr(adapter, "answer", None)):
        raise AdapterLoadError(
            f"adapter: an object of type {type(adapter).__name__} has no answer() method; "
            "give an object with answer(question), or an import path 'package.module:Name'"
        )
    lent = LentAdapter(adapter)
    return IsolatedAdapter(lent) if needs_isolation(lent) else lent
