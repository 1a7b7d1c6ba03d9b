"""``ragproof.evaluate``: one evaluation run from Python, through the same Dagster job,
the same launch form and the same checks as ``ragproof run`` (``ragproof_cli/run.py``)."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ragproof.errors import BadInput, InternalError
from ragproof.results import Run, read_run
from ragproof.stores import using_store
from ragproof_cli.errors import (
    DEBUG_HINT,
    UsageError,
    internal_message,
    one_line,
    store_fault_line,
)
from ragproof_core.adapters.loading import AdapterLoadError, lend_adapter, object_target
from ragproof_core.errors import StoreFault, UserError
from ragproof_core.gc_pause import imports_paused
from ragproof_core.store_health import STORE_FAULT

Dataset = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | Any  # Any: a DataFrame
# The name a dataset given as rows is written under (the run lists it as its dataset).
ROWS_FILE = "dataset.jsonl"
CONFIG_FILE = "ragproof.toml"


def evaluate(
    dataset: Dataset,
    adapter: str | object | None = None,
    *,
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    metrics: Iterable[str] | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
    shards: int = 1,
) -> Run:
    """Evaluate ``dataset`` against ``adapter`` as ``ragproof run`` does, store the run and
    return it.

    ``dataset``: a dataset file (JSON Lines or Parquet), a list of dataset lines as
    dicts, or a pandas DataFrame with the dataset's columns. ``adapter``: an import
    path ``package.module:Name``, or an object with ``answer`` (a pipeline built in
    this session: the run calls it in this process, on one shard, and leaves it open;
    the run records its class's path as its adapter); default: the config's, else the
    demo pipeline.
    ``config``: a ``ragproof.toml`` path, or a dict shaped like one. ``metrics``,
    ``name``, ``tags``, ``shards``: the ``[run]`` keys of the same names, over the
    config's. ``store``: a folder or URL (default: ``RAGPROOF_STORE``, else
    ``data/store``).

    Bad input raises ``BadInput`` with the command line's one line; a run the budget or
    the judge stopped is returned with that status (``aborted:budget``,
    ``aborted:judge``); a bug raises ``InternalError``.
    """
    lent = None
    if adapter is not None and not isinstance(adapter, str):
        try:
            lent = lend_adapter(adapter)
        except AdapterLoadError as exc:
            raise BadInput(f"ragproof: {one_line(str(exc))}") from None
        adapter = object_target(adapter)
    with tempfile.TemporaryDirectory(prefix="ragproof-evaluate-") as scratch:
        folder = Path(scratch)
        dataset_path = _dataset_file(dataset, folder)
        config_path = _config_file(config, folder)
        overrides: dict[str, Any] = {"shards": shards}
        if lent is not None:
            # The object is the adapter: the config file's options are not its.
            overrides["adapter_options_json"] = "{}"
        if metrics is not None:
            overrides["metrics"] = [metrics] if isinstance(metrics, str) else list(metrics)
        if name is not None:
            overrides["name"] = name
        if tags is not None:
            overrides["tags"] = {str(k): str(v) for k, v in tags.items()}
        with using_store(store) as opened:
            fields = {"dataset": dataset_path, "config_file": config_path, "adapter": adapter}
            run_id = _launch({**fields, **overrides}, lent)
            return read_run(opened, run_id)


def _in_a_notebook() -> bool:
    """True in a Jupyter kernel (IPython's shell there has a kernel; a terminal IPython's
    has none): the run draws tqdm's notebook bar."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def resume(
    run_id: str,
    adapter: object | None = None,
    *,
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    store: str | os.PathLike[str] | None = None,
) -> Run:
    """Continue an ``interrupted``, ``aborted:budget`` or ``aborted:judge`` run in place,
    as ``ragproof run --resume`` does (CONTRACT section 29), and return it: the adapter
    is called only for cases without results, and the finished run's numbers equal a
    run never stopped.

    ``adapter``: for a run ``evaluate`` made with an adapter object, that object (or
    one of its class) again; else the run builds its adapter from its own import path.
    ``config``: a ``ragproof.toml`` path or dict to resume with instead of the run's own
    (a new budget is allowed; a config whose digest differs is refused). ``store``: as
    ``evaluate``'s. A run that is not resumable, or whose dataset, config or judge
    settings changed, raises ``BadInput`` with the command line's one line.
    """
    lent = None
    fields: dict[str, Any] = {}
    if adapter is not None:
        try:
            lent = lend_adapter(adapter)
        except AdapterLoadError as exc:
            raise BadInput(f"ragproof: {one_line(str(exc))}") from None
        fields["adapter"] = object_target(adapter)
    with tempfile.TemporaryDirectory(prefix="ragproof-resume-") as scratch:
        fields["config_file"] = _config_file(config, Path(scratch))
        with using_store(store) as opened:
            resumed = _launch(fields, lent, resume=run_id)
            return read_run(opened, resumed)


def _launch(fields: dict[str, Any], lent: object | None = None, resume: str | None = None) -> str:
    """The steps of ``ragproof run`` (``_execute_run``) from its launch form on; returns
    the run id of a stored run, or raises as the command line would exit. ``fields``:
    the launch form's (``EvalRunConfig``); with ``resume``, the form is the run's own
    and ``fields`` gives only a ``config_file`` to use instead and the ``adapter`` path
    of the object lent, which must be the run's. ``lent``: the caller's
    adapter object (``lend_adapter``'s), which the job's one shard step, run in this
    process, takes instead of building the config's adapter."""
    with imports_paused():
        from ragproof_assets.evaluation.config import EvalRunConfig
        from ragproof_cli import execution
    from ragproof_core.run import adapter_lent, check_launch

    # Like the command line (and uvicorn): an adapter module in the working folder.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        form = (
            EvalRunConfig(**fields)
            if resume is None
            else execution.resume_form(resume, fields.get("config_file"))
        )
        config = form.resolve()
        lent_target = fields.get("adapter") if resume is not None else None
        if lent_target is not None and lent_target != config.adapter.target:
            raise BadInput(
                f"ragproof: adapter: run {resume}'s adapter is {config.adapter.target}, "
                f"the object given is a {lent_target}"
            )
        if lent is not None and config.run.shards > 1:
            raise BadInput(
                f"ragproof: run.shards: {config.run.shards} shards for an adapter object; "
                "an object is called in this process, on one shard: give its import path "
                "'package.module:Name' to run shards"
            )
        with nullcontext() if lent is None else adapter_lent(config.adapter, lent):
            check_launch(config, form.dataset)
            store_now = _store()
            store_now.check_writable()
            watched = execution.progress_where(
                notebook=_in_a_notebook(), terminal=sys.stderr.isatty()
            )
            run_id, result = execution.run_evaluation(
                form, config.run.shards, debug=False, progress=watched, resume=resume
            )
    except BadInput:
        raise
    except (UserError, UsageError) as exc:
        raise BadInput(f"ragproof: {one_line(str(exc))}") from None
    except StoreFault as exc:
        raise StoreFault(f"ragproof: {one_line(str(exc))}") from None
    except OSError as exc:
        fault = store_fault_line(exc)
        if fault is not None:
            raise StoreFault(f"ragproof: {one_line(fault)}") from None
        raise InternalError(internal_message(exc)) from exc
    if not result.success:
        messages, internal = execution.step_failures(result)
        refused = not internal and not messages[0].startswith(STORE_FAULT)
        if refused and not _store().run_exists(run_id):
            execution.forget_run(run_id, result)
        if internal:
            raise InternalError(
                f"ragproof: internal error (a bug in ragproof): {one_line(messages[0])}; "
                f"{DEBUG_HINT}"
            )
        if messages[0].startswith(STORE_FAULT):
            raise StoreFault(f"ragproof: {one_line(messages[0])}")
        raise BadInput(f"ragproof: {one_line(messages[0])}")
    return run_id


def _store():
    from ragproof_cli.common import open_store

    return open_store()


def _dataset_file(dataset: Dataset, folder: Path) -> str:
    """The dataset as a file ``ragproof run`` reads: a path as given; rows (dicts, or a
    DataFrame's) written as JSON Lines in ``folder``."""
    if isinstance(dataset, str | os.PathLike):
        return os.fspath(dataset)
    if hasattr(dataset, "to_dict") and hasattr(dataset, "columns"):
        rows = [_row_of_frame(row) for row in dataset.to_dict("records")]
    elif isinstance(dataset, Sequence) and not isinstance(dataset, bytes):
        rows = list(dataset)
    else:
        raise TypeError(
            "dataset: give a path, a list of dataset lines as dicts or a pandas DataFrame, "
            f"got {type(dataset).__name__}"
        )
    path = folder / ROWS_FILE
    with path.open("w", encoding="utf-8") as out:
        for index, row in enumerate(rows, start=1):
            if not isinstance(row, Mapping):
                raise BadInput(
                    f"ragproof: {path}:{index}: expected a JSON object (a dict), "
                    f"got {type(row).__name__}"
                )
            out.write(json.dumps(dict(row), ensure_ascii=False, default=_json_value) + "\n")
    return str(path)


def _row_of_frame(row: Mapping[str, Any]) -> dict[str, Any]:
    """A DataFrame row as a dataset line: a cell left empty (NaN, None) is a field left out."""
    return {key: value for key, value in row.items() if not _missing(value)}


def _missing(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, float) and math.isnan(value)


def _json_value(value: Any) -> Any:
    # NumPy scalars and arrays, as a DataFrame holds them.
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _config_file(config: str | os.PathLike[str] | Mapping[str, Any] | None, folder: Path):
    """The config as a file: a path as given; a dict written as ``ragproof.toml`` in
    ``folder``, an adapter's relative ``path`` option resolved against the working
    folder first (a file's is resolved against the file's folder)."""
    if config is None or isinstance(config, str | os.PathLike):
        return None if config is None else os.fspath(config)
    if not isinstance(config, Mapping):
        raise TypeError(
            f"config: give a path or a dict shaped like ragproof.toml, got {type(config).__name__}"
        )
    tables = {
        key: dict(value) if isinstance(value, Mapping) else value for key, value in config.items()
    }
    adapter = tables.get("adapter")
    if isinstance(adapter, dict) and isinstance(adapter.get("options"), Mapping):
        options = dict(adapter["options"])
        if isinstance(options.get("path"), str) and "://" not in options["path"]:
            options["path"] = str(Path(options["path"]).resolve())
        adapter["options"] = options
    path = folder / CONFIG_FILE
    path.write_text(toml_text(tables), encoding="utf-8")
    return str(path)


def toml_text(tables: Mapping[str, Any]) -> str:
    """``tables`` as TOML: top-level scalars first, then a ``[table]`` per mapping
    (nested mappings as ``[a.b]``)."""
    lines: list[str] = []
    _write_table(lines, (), tables)
    return "\n".join(lines) + "\n"


def _write_table(lines: list[str], prefix: tuple[str, ...], table: Mapping[str, Any]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    nested = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    if prefix and (scalars or not nested):
        lines.append("[" + ".".join(_key(p) for p in prefix) + "]")
    for key, value in scalars.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in nested.items():
        _write_table(lines, (*prefix, str(key)), value)


def _key(key: str) -> str:
    key = str(key)
    if key and all(c.isalnum() or c in "_-" for c in key) and key.isascii():
        return key
    return json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Iterable):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"config: cannot write {type(value).__name__} as TOML")
