"""Everything a run needs, checked before anything is stored (CONTRACT section 14).

A run that would fail on its input must fail before a run folder or a manifest
exists, so bad input leaves the store byte for byte unchanged. The large inputs
(the dataset and a recording) are read once, by the ``eval_dataset`` asset, which
calls ``preflight`` and ``staged_recording`` before writing the manifest, for runs
launched from the command line, the UI or the schedule alike. ``ragproof run``
checks only what is cheap before it creates the Dagster run (``check_launch``:
the judge's environment, its credentials and a live adapter's construction), and
turns a failed dataset step into the same one-line error.

Each check uses the config as the run will (``${NAME}`` expanded from the
environment: an unset variable is bad input naming the key), and an error it raises
has the run's secret values masked (CONTRACT section 28): a constructor that echoes
its token says ``***``. What is returned and stored is the config as written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragproof_core.adapters.loading import AdapterLoadError, load_adapter, resolve_target
from ragproof_core.adapters.recorded import RecordedAdapter
from ragproof_core.adapters.runner import close_adapter
from ragproof_core.config.expansion import expanded, run_masker
from ragproof_core.config.settings import AdapterSpec, Config, ConfigError
from ragproof_core.data.dataset import DatasetError, fewer_units_than, load_dataset
from ragproof_core.judge.environment import check_credentials, judge_environment
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.masking import NO_SECRETS, Masker
from ragproof_core.metrics.custom import run_registry
from ragproof_core.model import Case, units
from ragproof_core.run.evaluate import Selection
from ragproof_core.store.dataset_table import StagedDataset, staged_dataset_file
from ragproof_core.store.recording import StagedRecording, staged_recording


@dataclass(frozen=True, slots=True)
class Checked:
    """The validated inputs of a run."""

    config: Config
    cases: list[Case]
    judge_env: JudgeEnv


def preflight(config: Config, dataset: str | Path, *, adapter_checked: bool = False) -> Checked:
    """Read the dataset, parse the judge's environment and build the adapter.

    Raises ``DatasetError``, ``ConfigError`` or ``AdapterLoadError`` (each one
    line naming the file, line, key or variable); returns without side effects.
    ``adapter_checked``: this run's ``ragproof run`` already built the adapter
    (a million-line recording is validated once, not once per process).
    """
    with secrets_masked_in_errors(config) as (used, _):
        cases = load_dataset(dataset)
        # A conversation is never split across shards: it counts as one unit here.
        units_of = sum(1 for _ in units(cases)) if used.run.shards > 1 else len(cases)
        judge_env = _check_the_rest(used, dataset, len(cases), units_of, adapter_checked)
    return Checked(config, cases, judge_env)


@contextmanager
def secrets_masked_in_errors(
    config: Config, launched: Iterable[str] = ()
) -> Iterator[tuple[Config, Masker]]:
    """The config as the run uses it (``${NAME}`` expanded) and the run's masker; a
    bad-input error raised inside has the run's secret values masked. ``launched``: what
    ``${NAME}`` gave the launch's paths (a suite's dataset)."""
    masker = NO_SECRETS
    try:
        masker = run_masker(config, launched=launched)
        yield expanded(config).config, masker
    except (ConfigError, AdapterLoadError, DatasetError) as exc:
        if not masker:
            raise
        raise _masked_error(exc, masker) from None


def _masked_error(exc: Exception, masker: Masker) -> Exception:
    if isinstance(exc, DatasetError):
        return DatasetError(exc.path, exc.line, masker.text(exc.reason))
    return type(exc)(masker.text(str(exc)))


@dataclass(frozen=True, slots=True)
class Staged:
    """The validated inputs of a run, its dataset as the rows the run stores; ``config``
    as written (what the run stores); ``secrets_masked``: strings of its recording in
    which a secret value was masked as it was staged."""

    config: Config
    dataset: StagedDataset
    judge_env: JudgeEnv
    secrets_masked: int = 0


@contextmanager
def staged_inputs(
    config: Config,
    dataset: str | Path,
    run_id: str,
    *,
    adapter_checked: bool = False,
    launched: Iterable[str] = (),
) -> Iterator[tuple[Staged, StagedRecording | None]]:
    """``preflight`` for the run's dataset step, with ``staged_recording_of``: the same
    checks and errors, the dataset read as the ``dataset`` table's rows
    (``store/dataset_table.py``), never as cases. The dataset is read (and
    its rows written to a staged file, ``staged_dataset_file``) on a thread while the
    recording is read (pyarrow's reader and writer release the GIL, and the serial
    parts of one fill the other's gaps on a second core). Errors are raised as if the
    two were read one after the other: the dataset's, then the checks', then the
    recording's. ``launched``: what ``${NAME}`` gave the launch's paths, secrets too."""
    # The reader's thread is joined before the stack removes the staged files.
    with ExitStack() as stack, ThreadPoolExecutor(1) as reader:
        dataset_stack = stack.enter_context(ExitStack())
        dataset_read = reader.submit(
            lambda: dataset_stack.enter_context(staged_dataset_file(dataset, run_id))
        )
        refused: AdapterLoadError | None = None
        recording = None
        with secrets_masked_in_errors(config, launched) as (used, masker):
            try:
                recording = stack.enter_context(
                    staged_recording_of(used.adapter, run_id, masker=masker)
                )
            except AdapterLoadError as exc:
                refused = exc
            staged = dataset_read.result()
            judge_env = _check_the_rest(used, dataset, staged.rows, staged.units, adapter_checked)
            check_judge_credentials(used, judge_env)
            if refused is not None:
                raise refused
        yield Staged(config, staged, judge_env, masker.masked), recording


def _check_the_rest(
    config: Config, dataset: str | Path, cases: int, units_of: int, adapter_checked: bool
) -> JudgeEnv:
    """The shard count against the dataset, the judge's environment and the adapter."""
    shards = config.run.shards
    if shards > cases or (shards > 1 and shards > units_of):
        # An empty shard is a Dagster step for nothing; thousands of them never finish planning.
        raise ConfigError(
            f"run.shards: {config.run.shards} shards for {cases} case(s) in {dataset}; "
            "use at most one shard per case (a conversation counts as one)"
        )
    judge_env = judge_environment(config.judge)
    if not adapter_checked:
        check_adapter(config.adapter)
    return judge_env


def check_launch(config: Config, dataset: str | Path) -> JudgeEnv:
    """What ``ragproof run`` checks before it creates the Dagster run: the judge's
    environment, a live adapter (built once, kept for the in-process step) and the
    shard count against the dataset's lines. The dataset and a recording are read by
    the run's dataset step, once; only a dataset with fewer lines than shards (a run
    ``preflight`` refuses) is read here, to word the error before the run exists."""
    with secrets_masked_in_errors(config) as (used, _):
        if used.run.shards > 1 and fewer_units_than(dataset, used.run.shards):
            judge_env = preflight(config, dataset).judge_env
        else:
            judge_env = judge_environment(used.judge)
            if recording_path(used.adapter) is None:
                check_adapter(used.adapter)
        check_judge_credentials(used, judge_env)
    return judge_env


def check_judge_credentials(config: Config, judge_env: JudgeEnv) -> None:
    """A run that will call the judge (a judge model, and a selected metric that asks
    one: ``MetricSpec.judged``) refuses a model LiteLLM cannot build a request for
    (``judge.environment.check_credentials``), before anything is stored. A run whose
    metrics ask no judge needs no key, and is not made to import LiteLLM."""
    if not judge_env.models:
        return
    selection = Selection.from_settings(config.run, run_registry(config.metrics))
    if any(spec.judged for spec in selection.specs):
        check_credentials(judge_env)


def recording_path(spec: AdapterSpec) -> str | None:
    """The file a run's adapter replays when it is ``RecordedAdapter`` built from its
    ``path`` option alone, else None: the dataset step stores such a recording."""
    options = dict(spec.options)
    if set(options) != {"path"} or not isinstance(options["path"], str):
        return None
    try:
        factory = resolve_target(spec.target)
    except AdapterLoadError:
        return None  # check_adapter reports it
    return options["path"] if factory is RecordedAdapter else None


@contextmanager
def staged_recording_of(
    spec: AdapterSpec, run_id: str, masker: Masker = NO_SECRETS
) -> Iterator[StagedRecording | None]:
    """The run's recording read and validated (``store/recording.py``), staged outside
    the store until the caller stores it, the run's secret values masked (``masker``);
    None when the adapter replays no recording. Raises ``AdapterLoadError`` worded as
    building the adapter would word it."""
    path = recording_path(spec)
    if path is None:
        yield None
        return
    with ExitStack() as stack:
        try:
            staged = stack.enter_context(staged_recording(path, run_id, masker=masker))
        except AdapterLoadError as exc:
            raise AdapterLoadError(f"building adapter {spec.target!r} failed: {exc}") from exc
        yield staged


# The adapter preflight built, kept for the evaluation step of the same process
# (`ragproof run` executes the job in-process), so a 100,000-line recording is
# parsed once, not once to check it and again to run it. One entry at most.
# `ragproof.evaluate(adapter=obj)` hands its caller's object to the step the same way
# (``adapter_lent``): a live object cannot travel in a Dagster run's config, and the
# job's definitions (its resources) are rebuilt from their module for every run.
_BUILT: dict[str, object] = {}


def _spec_key(spec: AdapterSpec) -> str:
    return json.dumps([spec.target, spec.options], sort_keys=True, default=str)


def check_adapter(spec: AdapterSpec) -> None:
    """Import and construct the adapter: a missing module, a bad option or an
    unreadable recording is reported now, not as a failed step."""
    key = _spec_key(spec)
    if key in _BUILT:
        return
    adapter = load_adapter(spec.target, spec.options)
    _close_built()
    _BUILT[key] = adapter


@contextmanager
def adapter_lent(spec: AdapterSpec, adapter: object) -> Iterator[None]:
    """``adapter`` (``lend_adapter``'s) given to this process's evaluation step of
    ``spec`` meanwhile, as if ``check_adapter`` had built it: the caller runs the job in
    this process, on one shard. Gone after, whether a step took it or not."""
    key = _spec_key(spec)
    _close_built()
    _BUILT[key] = adapter
    try:
        yield
    finally:
        if _BUILT.get(key) is adapter:
            _close_built()


def _close_built() -> None:
    for stale in list(_BUILT.values()):
        _close(stale)
    _BUILT.clear()


def _close(adapter: object) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(close_adapter(adapter))
        return
    # The caller's thread runs a loop of its own (a notebook's, ``ragproof.evaluate``),
    # where asyncio.run cannot: the adapter is closed on a thread of its own.
    with ThreadPoolExecutor(1) as closer:
        closer.submit(asyncio.run, close_adapter(adapter)).result()


def take_adapter(spec: AdapterSpec, *, prechecked: bool = False, stored: bool = False) -> object:
    """The adapter ``check_adapter`` built in this process for ``spec``, else a new one.

    The caller owns it (and closes it). Steps run in their own processes (the
    UI's default executor) simply build their own; ``prechecked`` says the
    run's preflight already validated the adapter's input (``load_adapter``);
    ``stored``: the run stored its recording, which the adapter replays from the
    batches handed to it (``RecordedAdapter.stored``), never reading the file.
    """
    path = recording_path(spec) if stored else None
    if path is not None:
        # The stored rows replace the file: an adapter check_adapter built is not needed.
        _BUILT.pop(_spec_key(spec), None)
        return RecordedAdapter.stored(path)
    adapter = _BUILT.pop(_spec_key(spec), None)
    if adapter is None:
        return load_adapter(spec.target, spec.options, prechecked=prechecked)
    return adapter
