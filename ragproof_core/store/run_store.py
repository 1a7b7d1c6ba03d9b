"""``RunStore``: the one door to the run store, for the Dagster assets and the CLI.

A run is written table by table, in ``layout.TABLES`` order, each file
atomically; ``write_run`` comes last and marks the run finished. Readers of
single tables (``read_dataset`` ... ``case_results_frame``) read the run's files
directly and work on unfinished runs too, which the pipeline needs between
steps. ``list_runs``, ``get_run`` and ``last_completed_run`` see finished runs
only, like the DuckDB views.

Secrets never reach the store: before a manifest, a document or a run record
is written, the rule of ``ragproof_core/config/redaction.py`` is applied (keys whose
name holds a secret word, URL user info and query values, to any depth).
Redaction rather than rejection, so a config carrying a header such as
``Authorization`` still records every other setting.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ragproof_core.config import settings
from ragproof_core.config.manifest import RunManifest
from ragproof_core.config.redaction import REDACTED, is_secret_key
from ragproof_core.config.redaction import redact as redact_secrets
from ragproof_core.errors import StoreFault, UserError
from ragproof_core.gc_pause import collector_paused
from ragproof_core.metrics.registry import metric_order
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.model import Case, CaseOutput, MetricResult
from ragproof_core.store import (
    calibrations,
    damage,
    files,
    probes,
    recording,
    result_tally,
    schema,
    views,
)
from ragproof_core.store import labels as label_files
from ragproof_core.store.catalog import Catalog, entry_time
from ragproof_core.store.catalog_views import RUN_STATES_VIEW, catalog_ddl, reader_sources
from ragproof_core.store.dataset_table import StagedDataset
from ragproof_core.store.file_sql import file_reader
from ragproof_core.store.handles import StoredTable
from ragproof_core.store.heartbeat import Heartbeat
from ragproof_core.store.layout import (
    SHARDED_TABLES,
    StoreLayout,
    new_run_id,
    validate_run_id,
)
from ragproof_core.store.object_files import files_for
from ragproof_core.store.schema import RunRecord

if TYPE_CHECKING:
    # Annotations only: a process building no frame (the command) skips pandas' 0.4 s.
    import pandas as pd

__all__ = [
    "REDACTED",
    "RunDamaged",
    "RunNotFound",
    "RunRecord",
    "RunStore",
    "is_secret_key",
    "new_run_id",
    "redact_secrets",
]

# Rows encoded at a time when writing outputs and case results: large enough for
# good Parquet row groups, small enough that a 100,000-case run's Arrow copy
# never has to exist whole.
WRITE_BATCH_ROWS = 50_000
# The catalog's finished runs in force (damaged ones aside): what lists and pages show.
IN_FORCE = "kind = 'finished' AND status <> 'damaged'"


DATASET_COUNTS = (
    f"SELECT dataset, count(*) AS n FROM {RUN_STATES_VIEW} WHERE {IN_FORCE} "
    "GROUP BY dataset ORDER BY dataset"
)


def _records_query(where: str, newest_first: bool, limit: int | None, offset: int) -> str:
    order = "DESC" if newest_first else "ASC"
    query = (
        f"SELECT * FROM {RUN_STATES_VIEW} WHERE {where} ORDER BY started_at {order}, run_id {order}"
    )
    if limit is not None:
        query += f" LIMIT {int(limit)} OFFSET {int(offset)}"
    return query


def _catalogued(table: pa.Table) -> list[RunRecord]:
    """The run records of catalog rows, each with the file found damaged, if any."""
    records = schema.decode_runs(table)
    damaged = table.column("damaged_file").to_pylist()
    return [
        replace(record, damaged_file=file) if file else record
        for record, file in zip(records, damaged, strict=True)
    ]


def _counts(table: pa.Table) -> dict[str, int]:
    return dict(
        zip(table.column("dataset").to_pylist(), table.column("n").to_pylist(), strict=True)
    )


class RunDamaged(StoreFault):
    """A run named by a command whose files are damaged (CONTRACT section 29): exit 5."""

    def __init__(self, run_id: str, damaged_file: str, reason: str = "cannot be read") -> None:
        super().__init__(
            f"the store: run {run_id!r} is damaged: {damaged_file}: {reason}; "
            "`ragproof verify --repair` moves it to quarantine/"
        )
        self.run_id = run_id
        self.damaged_file = damaged_file


class RunNotFound(UserError, KeyError):
    """No such run in the store (or, for ``get_run``, the run has not finished)."""

    def __init__(self, run_id: str, detail: str = "no such run in the store") -> None:
        super().__init__(run_id)
        self.run_id = run_id
        self.message = f"run {run_id!r}: {detail}"

    def __str__(self) -> str:
        return self.message


def _redacted_record(record: RunRecord) -> RunRecord:
    return replace(
        record,
        dataset=redact_secrets(record.dataset),
        adapter=redact_secrets(record.adapter),
        judge_model=redact_secrets(record.judge_model),
        config_json=_redact_config_json(record.config_json),
    )


def _redact_config_json(config_json: str) -> str:
    try:
        config = json.loads(config_json)
    except json.JSONDecodeError as exc:
        raise ValueError(f"config_json is not valid JSON: {exc}") from exc
    redacted = redact_secrets(config)
    # Keep the caller's exact text when nothing needed masking.
    return config_json if redacted == config else json.dumps(redacted, ensure_ascii=False)


# The run settings that change what a score means; runs differing in them are not
# comparable (concurrency, timeout_s and shards change how a run goes, not its scores).
BASELINE_SETTINGS = ("k", "source_match", "metrics")


def stored_run_settings(record: RunRecord) -> dict[str, Any]:
    """The ``[run]`` settings a run recorded in its ``config_json`` (empty if none)."""
    try:
        config = json.loads(record.config_json or "{}")
    except json.JSONDecodeError:
        return {}
    run = config.get("run") if isinstance(config, dict) else None
    return run if isinstance(run, dict) else {}


def same_scoring(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(key) == b.get(key) for key in BASELINE_SETTINGS)


class ResultsWriter:
    """Appends evaluated cases to one run's (or shard's) outputs and case results."""

    def __init__(self, run_id: str, outputs: Any | None, results: Any) -> None:
        # ``outputs`` None: the outputs are the run's stored recording, written by no one
        # (``RunStore.outputs_from_recording``); only the results are.
        self.run_id = run_id
        self._outputs = outputs
        self._results = results
        # The results written so far, grouped for the run's tally (``result_groups``);
        # None once they are too many groups to be worth keeping.
        self._groups: pa.Table | None = result_tally.GROUP_SCHEMA.empty_table()

    def result_groups(self) -> dict[str, list] | None:
        """The results written, grouped as the run's tally groups them (columns as
        lists, for a shard's report); None when there are too many groups to keep."""
        return None if self._groups is None else self._groups.to_pydict()

    def _group(self, table: pa.Table) -> None:
        if self._groups is None:
            return
        groups = result_tally.merge_groups([self._groups, result_tally.group_results(table)])
        self._groups = groups if groups.num_rows < result_tally.MAX_SHARD_GROUPS else None

    def write(
        self,
        outputs: Sequence[CaseOutput] | pa.Table,
        results: Sequence[MetricResult] | ResultColumns,
        trial: int = 1,
    ) -> None:
        """``outputs`` as objects or already encoded (``schema.encode_outputs``, any
        run_id); ``results`` as objects or as columns, written as they are, every row
        marked with ``trial`` (CONTRACT section 27; 1 in a run without repeats)."""
        if self._outputs is not None:
            self._write_outputs(self._outputs, outputs, trial)
        if isinstance(results, ResultColumns):
            table = result_table(self.run_id, results)
            self._write_encoded(self._results, table, trial)
            self._group(table)
            return
        for start in range(0, len(results), WRITE_BATCH_ROWS):
            chunk = schema.encode_case_results(
                self.run_id, results[start : start + WRITE_BATCH_ROWS]
            )
            chunk = schema.with_trial(chunk, trial)
            self._results.write_table(chunk, row_group_size=files.ROW_GROUP_SIZE)
            self._group(chunk)

    def _write_outputs(
        self, writer: Any, outputs: Sequence[CaseOutput] | pa.Table, trial: int
    ) -> None:
        if isinstance(outputs, pa.Table):
            self._write_encoded(writer, outputs, trial)
            return
        for start in range(0, len(outputs), WRITE_BATCH_ROWS):
            chunk = outputs[start : start + WRITE_BATCH_ROWS]
            writer.write_table(
                schema.with_trial(schema.encode_outputs(self.run_id, chunk), trial),
                row_group_size=files.ROW_GROUP_SIZE,
            )

    def _write_encoded(self, writer: Any, table: pa.Table, trial: int) -> None:
        table = table.set_column(0, table.schema.field(0), _run_ids(self.run_id, table.num_rows))
        table = schema.with_trial(table, trial)
        for start in range(0, table.num_rows, WRITE_BATCH_ROWS):
            writer.write_table(
                table.slice(start, WRITE_BATCH_ROWS), row_group_size=files.ROW_GROUP_SIZE
            )


def _later_trials(outputs: pa.Table) -> int:
    """Rows of ``outputs`` of a case's second or later trial."""
    if "trial" not in outputs.column_names:
        return 0
    return int(pc.sum(pc.greater(outputs.column("trial"), 1)).as_py() or 0)


def _run_ids(run_id: str, rows: int) -> pa.Array:
    return pa.repeat(pa.scalar(run_id, pa.string()), rows)


def result_table(run_id: str, results: ResultColumns) -> pa.Table:
    """Result rows as columns in the ``case_results`` table's schema."""
    return pa.Table.from_arrays(
        [_run_ids(run_id, len(results)), *results.arrays(), pa.nulls(len(results), pa.int32())],
        schema=schema.CASE_RESULTS_SCHEMA,
    )


@dataclass(frozen=True, slots=True)
class RunBatch:
    """Aligned rows of a run's dataset and of its stored recording (None when the run
    replays no recording): row i of ``recorded`` is what case i of ``dataset`` replays."""

    dataset: pa.Table
    recorded: pa.Table | None
    # The run's row of the batch's first row, and how to read rows of the run whole
    # (both tables, every column: ``RunStore.run_rows``) when the batch holds only
    # some columns (``iter_run_batches``' ``columns``).
    start: int = 0
    reader: Callable[[int, int], RunBatch] | None = None

    @property
    def rows(self) -> int:
        return self.dataset.num_rows

    def sliced(self, start: int, stop: int) -> RunBatch:
        recorded = None if self.recorded is None else self.recorded.slice(start, stop - start)
        return RunBatch(
            self.dataset.slice(start, stop - start), recorded, self.start + start, self.reader
        )

    def whole(self) -> tuple[pa.Table, pa.Table | None]:
        """The batch's rows with every column of both tables."""
        if self.reader is None:
            return self.dataset, self.recorded
        batch = self.reader(self.start, self.start + self.rows)
        return batch.dataset, batch.recorded

    def cases(self) -> list[Case]:
        dataset, _ = self.whole()
        with collector_paused():
            return schema.decode_dataset(dataset)

    def recorded_outputs(self) -> list[CaseOutput] | None:
        """What each case replays, or None when the run stored no recording."""
        _, recorded = self.whole()
        if recorded is None:
            return None
        with collector_paused():
            return schema.decode_outputs(recorded)

    def joined(self, later: RunBatch) -> RunBatch:
        recorded = (
            None
            if self.recorded is None or later.recorded is None
            else pa.concat_tables([self.recorded, later.recorded])
        )
        return RunBatch(
            pa.concat_tables([self.dataset, later.dataset]), recorded, self.start, self.reader
        )


def _range_tables(
    parquet: pq.ParquetFile,
    start: int,
    end: int,
    batch_rows: int,
    columns: Sequence[str] | None = None,
) -> Iterator[pa.Table]:
    """Rows ``start`` to ``end`` (exclusive) of a Parquet file in tables of ``batch_rows``
    rows (the last one shorter), reading only the row groups that hold them (and only
    ``columns``' Parquet columns when given: ``parquet_columns``)."""
    metadata = parquet.metadata
    groups, first_row, position = [], None, 0
    for index in range(metadata.num_row_groups):
        rows = metadata.row_group(index).num_rows
        if position < end and position + rows > start:
            groups.append(index)
            first_row = position if first_row is None else first_row
        position += rows
    if not groups or end <= start:
        return
    skip, left = start - first_row, end - start
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    for record_batch in parquet.iter_batches(
        batch_size=batch_rows, row_groups=groups, columns=columns
    ):
        if skip >= record_batch.num_rows:
            skip -= record_batch.num_rows
            continue
        record_batch = record_batch.slice(skip, min(record_batch.num_rows - skip, left))
        skip, left = 0, left - record_batch.num_rows
        pending.append(record_batch)
        pending_rows += record_batch.num_rows
        while pending_rows >= batch_rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, batch_rows)
            rest = table.slice(batch_rows)
            pending, pending_rows = rest.to_batches(), rest.num_rows
        if left == 0:
            break
    if pending_rows:
        yield pa.Table.from_batches(pending)


def parquet_columns(parquet: pq.ParquetFile, names: Sequence[str]) -> list[str]:
    """The columns of ``parquet`` to read for ``names`` (``metrics.spec.ColumnScore``'s
    note): a whole top-level column by its name, a field of a list of structs
    (``retrieved.id``) as its leaf's path. Names the file does not hold are left out."""
    wanted = set(names)
    chosen: dict[str, None] = {}
    for index in range(len(parquet.schema)):
        path = parquet.schema.column(index).path
        parts = path.split(".")
        if parts[0] in wanted:
            chosen[parts[0]] = None
        elif len(parts) > 2 and f"{parts[0]}.{parts[-1]}" in wanted:
            chosen[path] = None
    return list(chosen)


def _unfinished_conversation_row(dataset: pa.Table) -> int:
    """Where a conversation cut off by the end of ``dataset`` rows starts (its last turn
    is not among them), else the row count: ``model.unfinished_conversation`` on rows."""
    rows = dataset.num_rows
    if not rows or "conversation_id" not in dataset.column_names:
        return rows
    last = dataset.slice(rows - 1)
    conversation = last.column("conversation_id")[0].as_py()
    if conversation is None or last.column("turn")[0].as_py() == last.column("turns")[0].as_py():
        return rows
    start = rows - 1
    column = dataset.column("conversation_id")
    while start > 0 and column[start - 1].as_py() == conversation:
        start -= 1
    return start


class RunStore:
    """The run store at ``root`` (default: ``RAGPROOF_STORE`` or ``data/store``): a local
    folder or an fsspec URL such as ``s3://bucket/prefix`` (``remote.py``)."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.layout = StoreLayout.at(root if root is not None else settings.store_root())
        self.files = files_for(self.layout)
        self.catalog = Catalog(self.layout, self.files)

    @classmethod
    def holding(cls, table: StoredTable) -> RunStore:
        """The run store holding a handed-over table (on this machine's view of it)."""
        return cls(table.location)

    def __repr__(self) -> str:
        return f"RunStore({self.layout.location!r})"

    # --- DuckDB ---------------------------------------------------------------------------

    def ensure_views(self, *, timeout_s: float = views.DEFAULT_LOCK_TIMEOUT_S) -> bool:
        """Create the views if missing or stale; True when this call wrote them."""
        return views.ensure_views(self.layout, timeout_s=timeout_s)

    def connect(
        self, read_only: bool = True, *, timeout_s: float = views.DEFAULT_LOCK_TIMEOUT_S
    ) -> duckdb.DuckDBPyConnection:
        return views.connect(self.layout, read_only=read_only, timeout_s=timeout_s)

    def heartbeat(self, run_id: str, *, once_started: bool = False) -> Heartbeat:
        """Renew the run's heartbeat every 5 s while entered, and watch for its stop
        request (``heartbeat.py``). ``once_started``: beat only once this attempt has
        (re)written the run's manifest (the command, around a run that may be refused)."""
        since = datetime.now(UTC) - timedelta(seconds=1)
        started = False

        def alive() -> bool:
            nonlocal started
            started = started or self._started_since(run_id, since)
            return started

        return Heartbeat(
            self.catalog,
            validate_run_id(run_id),
            done=lambda: self.is_finished(run_id) or not self.run_exists(run_id),
            stop_requested=lambda: self.stop_signal(run_id) is not None,
            alive=alive if once_started else None,
        )

    def _started_since(self, run_id: str, moment: datetime) -> bool:
        """Whether the run was (re)started after ``moment``: its open entry in force, which
        ``write_manifest`` logs, is newer (the same on a local and an object store)."""
        entry = self.catalog.open_entry(run_id)
        return entry is not None and entry_time(entry) >= moment

    def request_stop(self, run_id: str, signum: int) -> None:
        """Ask the run's steps to stop (a signal reached the command that runs it)."""
        self.files.write_json(self.layout.stop_path(run_id), {"signal": int(signum)})

    def stop_signal(self, run_id: str) -> int | None:
        """The signal a stop was requested with, if one was."""
        try:
            return int(json.loads(self.files.read_text(self.layout.stop_path(run_id)))["signal"])
        except FileNotFoundError:
            return None

    def clear_stop(self, run_id: str) -> None:
        self.files.remove(self.layout.stop_path(run_id))

    def remove_run(self, run_id: str, *, quarantine: bool = False) -> int:
        """Take a run out of the store: its folder deleted, or moved whole into
        ``quarantine/`` (never deleted); the catalog marks it removed at once, so no
        view reads it again. Returns the bytes its folder held."""
        validate_run_id(run_id)
        folder = self.layout.run_dir(run_id)
        held = sum(size for _, size in self.files.walk(folder))
        self.catalog.mark(run_id, "removed")
        # Its open entry would outlive the mark's compaction: it goes with the run.
        for path in self.files.glob(str(self.layout.catalog_log_dir("runs") / f"{run_id}~*")):
            if not str(path).endswith("-removed.parquet"):
                self.files.remove(path)
        self.catalog.end_beats(run_id)
        if quarantine:
            self.files.move(folder, self.layout.quarantine_dir / "runs" / run_id)
        else:
            self.files.remove_tree(folder)
        return held

    # --- resume (CONTRACT section 29) -----------------------------------------------------

    def set_aside_prior(self, run_id: str, redo_marker: str, repeats: int = 1) -> dict[str, int]:
        """Before a run resumes in place: its results so far become ``<table>-prior-N``
        files (which every reader of the run's tables reads with the new ones), without
        the cases to redo (any result whose reason starts with ``redo_marker``, e.g. not
        judged at a budget stop; a case with fewer than ``repeats`` trials; a
        conversation with any such turn, whole); its shard reports go (their attempts'
        judge spend stays on record). A single case to redo keeps its output, to be
        judged as it is (``outputs_to_judge``): the pipeline is asked again only for
        cases without one. With repeats (CONTRACT section 27) a case to redo is redone
        whole, every trial asked again. Returns what is kept: ``{"cases",
        "case_failures"}``, which the resumed run's totals add."""
        redo = self._cases_to_redo(run_id, redo_marker, repeats)
        redo_ids = pa.array(sorted(redo), pa.string())
        single = self._single_cases(run_id, redo) if repeats == 1 else set()
        kept = {"cases": 0, "case_failures": 0}
        to_judge: list[pa.Table] = []
        for table in SHARDED_TABLES:
            for part in self.table_parts(run_id, table):
                if "-prior-" in PurePath(part).name:
                    data = self.files.parquet_file(part).read()
                    if table == "outputs":
                        self._count_kept(data, kept)
                    continue
                data = self.files.parquet_file(part).read()
                ids = data.column("case_id")
                if redo:
                    if table == "outputs" and single:
                        to_judge.append(data.filter(pc.is_in(ids, pa.array(sorted(single)))))
                    data = data.filter(pc.invert(pc.is_in(ids, redo_ids)))
                if table == "outputs":
                    self._count_kept(data, kept)
                target = self._prior_path(run_id, table)
                self.files.write_parquet(target, data)
                self.files.remove(part)
        for document in self.files.glob(str(self.layout.run_dir(run_id) / "shard_*.json")):
            self.files.remove(document)
        self._keep_to_judge(run_id, to_judge)
        return kept

    def _single_cases(self, run_id: str, ids: set[str]) -> set[str]:
        """Those of ``ids`` that are single cases of the run's dataset (not a turn, not a
        conversation: those are redone whole)."""
        if not ids:
            return set()
        parquet = self.files.parquet_file(self.layout.table_path(run_id, "dataset"))
        if "conversation_id" not in parquet.schema_arrow.names:
            return set(ids)
        rows = parquet.read(columns=["id", "conversation_id"])
        alone = rows.filter(pc.is_null(rows.column("conversation_id")))
        return ids & set(alone.column("id").to_pylist())

    def _keep_to_judge(self, run_id: str, found: list[pa.Table]) -> None:
        """The outputs a resume judges as they are: those found now, and those an earlier
        resume did not reach, less every case kept from before."""
        path = self.layout.to_judge_path(run_id)
        if self.files.is_file(path):
            found = [self.files.parquet_file(path).read(), *found]
        if not found:
            return
        rows = pa.concat_tables(found, promote_options="default")
        # The latest output of each case, not one kept from before.
        done = self.done_cases(run_id)
        latest = {case_id: i for i, case_id in enumerate(rows.column("case_id").to_pylist())}
        chosen = sorted(i for case_id, i in latest.items() if case_id not in done)
        self.files.write_parquet(path, rows.take(pa.array(chosen, pa.int64())))

    def outputs_to_judge(self, run_id: str) -> dict[str, CaseOutput]:
        """The stored outputs a resumed run judges without asking the pipeline again,
        by case id (none for a run never stopped before its judging)."""
        try:
            rows = self.files.parquet_file(self.layout.to_judge_path(run_id)).read()
        except FileNotFoundError:
            return {}
        done = self.done_cases(run_id)
        with collector_paused():
            return {o.case_id: o for o in schema.decode_outputs(rows) if o.case_id not in done}

    @staticmethod
    def _count_kept(outputs: pa.Table, kept: dict[str, int]) -> None:
        # A case is counted once, by its first trial (a row without a trial is one); its
        # failures trial by trial, as the run counts them.
        kept["cases"] += outputs.num_rows - _later_trials(outputs)
        kept["case_failures"] += outputs.num_rows - outputs.column("error").null_count

    def _prior_path(self, run_id: str, table: str) -> Any:
        index = 0
        while True:
            path = self.layout.run_dir(run_id) / f"{table}-prior-{index:04d}.parquet"
            if not self.files.is_file(path):
                return path
            index += 1

    def _cases_to_redo(self, run_id: str, redo_marker: str, repeats: int = 1) -> set[str]:
        """Cases (and conversation ids) with a result to redo, or fewer than ``repeats``
        trials (CONTRACT section 27: a case is redone with all its trials), a
        conversation whole."""
        redo: set[str] = set()
        for part in self.table_parts(run_id, "case_results"):
            data = self.files.parquet_file(part).read(columns=["case_id", "reason"])
            reasons = data.column("reason").fill_null("")
            hit = pc.starts_with(reasons, redo_marker)
            redo |= set(data.column("case_id").filter(hit).to_pylist())
        if repeats > 1:
            redo |= self._cases_short_of_trials(run_id, repeats)
        if not redo:
            return redo
        path = self.layout.table_path(run_id, "dataset")
        dataset = self.files.parquet_file(path)
        if "conversation_id" in dataset.schema_arrow.names:
            turns = dataset.read(columns=["id", "conversation_id"]).to_pylist()
            cut = {t["conversation_id"] for t in turns if t["id"] in redo and t["conversation_id"]}
            cut |= redo  # a conversation's own results are stored under its id
            redo |= {t["id"] for t in turns if t["conversation_id"] in cut} | (
                cut & {t["conversation_id"] for t in turns}
            )
        return redo

    def _cases_short_of_trials(self, run_id: str, repeats: int) -> set[str]:
        """The cases whose outputs hold fewer than ``repeats`` trials (a run stopped
        between a case's trials)."""
        trials: Counter[str] = Counter()
        for part in self.table_parts(run_id, "outputs"):
            ids = self.files.parquet_file(part).read(columns=["case_id"]).column(0)
            trials.update(ids.to_pylist())
        return {case_id for case_id, n in trials.items() if n < repeats}

    def done_cases(self, run_id: str) -> set[str]:
        """The cases a resumed run keeps from before (its ``outputs-prior-N`` files)."""
        done: set[str] = set()
        for part in self.table_parts(run_id, "outputs"):
            if "-prior-" in PurePath(part).name:
                done |= set(self.files.parquet_file(part).read(columns=["case_id"])[0].to_pylist())
        return done

    def check_writable(self) -> None:
        """Raise ``StoreFault`` when a run could not be stored here (a read-only mount, a
        full disk, a folder that is not one): checked before any adapter or judge call."""
        if self.layout.is_remote:
            return
        root = Path(self.layout.root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = files.temp_path_for(root / ".write-probe")
            probe.write_bytes(b"ragproof")
            probe.unlink()
        except OSError as exc:
            raise StoreFault(
                f"the store could not be written: {self.layout.location}: "
                f"{exc.strerror or type(exc).__name__}"
            ) from exc

    # --- run identity ---------------------------------------------------------------------

    def run_exists(self, run_id: str) -> bool:
        return self.files.is_file(self.layout.manifest_path(run_id))

    def is_finished(self, run_id: str) -> bool:
        return self.files.is_file(self.layout.table_path(run_id, "run"))

    def _require_run(self, run_id: str) -> None:
        if not self.run_exists(run_id):
            raise RunNotFound(run_id)

    def write_manifest(self, run_id: str, manifest: Mapping[str, Any]) -> None:
        """Start (or restart) a run: write its manifest, secrets redacted.

        Restarting a finished run (Dagster re-materializing its partition)
        first removes its ``run.parquet``, so the views hide the run until the
        new attempt finishes instead of mixing old and new files.
        """
        self.files.remove(self.layout.table_path(run_id, "run"))
        self.files.remove(self.layout.stop_path(run_id))
        redacted = redact_secrets(dict(manifest))
        # Listed from now on, before its manifest: running while it beats, interrupted
        # once it stops, even when killed right here.
        self.catalog.open_run(run_id, redacted)
        self.files.write_json(self.layout.manifest_path(run_id), redacted)

    def read_manifest(self, run_id: str) -> dict[str, Any]:
        try:
            text = self.files.read_text(self.layout.manifest_path(run_id))
        except FileNotFoundError:
            raise RunNotFound(run_id) from None
        return json.loads(text)

    def run_manifest(self, run_id: str) -> RunManifest:
        """The run's manifest as the dataset step wrote it, typed."""
        return RunManifest.from_dict(self.read_manifest(run_id))

    def write_document(self, run_id: str, name: str, document: Mapping[str, Any]) -> None:
        """Store a small JSON document beside the run's tables, secrets redacted."""
        self._require_run(run_id)
        self.files.write_json(
            self.layout.document_path(run_id, name), redact_secrets(dict(document))
        )

    def read_documents(self, run_id: str, prefix: str) -> list[dict[str, Any]]:
        """Every document of the run whose name starts with ``prefix``, by name."""
        pattern = str(self.layout.run_dir(run_id) / f"{prefix}*.json")
        return [json.loads(self.files.read_text(path)) for path in sorted(self.files.glob(pattern))]

    def read_document(self, run_id: str, name: str) -> dict[str, Any]:
        try:
            text = self.files.read_text(self.layout.document_path(run_id, name))
        except FileNotFoundError:
            raise RunNotFound(run_id, f"run has no {name} document") from None
        return json.loads(text)

    # --- per-run tables -------------------------------------------------------------------

    def _write(self, run_id: str, table: str, data: pa.Table) -> None:
        self._require_run(run_id)
        self.files.write_parquet(self.layout.table_path(run_id, table), data)

    def _write_batched(
        self,
        run_id: str,
        table: str,
        encode: Callable[[str, Sequence[Any]], pa.Table],
        rows: Sequence[Any],
    ) -> None:
        self._require_run(run_id)
        batches = (
            encode(run_id, rows[start : start + WRITE_BATCH_ROWS])
            for start in range(0, max(len(rows), 1), WRITE_BATCH_ROWS)
        )
        self.files.write_parquet_batches(
            self.layout.table_path(run_id, table), schema.SCHEMAS[table], batches
        )

    def table_parts(self, run_id: str, table: str) -> list[Any]:
        """The files holding ``table`` of one run: the whole file, or one per shard."""
        if table not in SHARDED_TABLES:
            path = self.layout.table_path(run_id, table)
            return [path] if self.files.is_file(path) else []
        return self.files.glob(self.layout.table_parts_glob(run_id, table))

    def table_handle(self, run_id: str, table: str, rows: int) -> StoredTable:
        """A handle on one of this run's stored tables: what the assets pass each other."""
        files = tuple(self.layout.url(part) for part in self.table_parts(run_id, table))
        return StoredTable(self.layout.location, run_id, table, rows, files)

    def _read(self, run_id: str, table: str) -> pa.Table:
        path = self.layout.table_path(run_id, table)
        try:
            if table in SHARDED_TABLES:
                parts = self.table_parts(run_id, table)
                if not parts:
                    raise FileNotFoundError(path)
                tables = [self.files.parquet_file(part).read() for part in parts]
                return tables[0] if len(tables) == 1 else pa.concat_tables(tables)
            return self.files.parquet_file(path).read()
        except FileNotFoundError:
            self._require_run(run_id)
            raise FileNotFoundError(f"run {run_id!r} has no {table} table yet: {path}") from None

    def clear_results(self, run_id: str) -> None:
        """Remove a run's outputs, case results, shard reports and shard attempts (a
        restarted run may use another shard count; its old parts must not join the new
        ones, and it starts its judge spend afresh)."""
        for table in SHARDED_TABLES:
            for part in self.table_parts(run_id, table):
                self.files.remove(part)
        for pattern in ("shard_*.json", "attempt_*.json"):
            for document in self.files.glob(str(self.layout.run_dir(run_id) / pattern)):
                self.files.remove(document)
        self.files.remove(self.layout.to_judge_path(run_id))

    @contextmanager
    def results_writer(
        self, run_id: str, shard: int | None = None, *, outputs: bool = True
    ) -> Iterator[ResultsWriter]:
        """Stream outputs and case results to the run's files (one shard's files when
        ``shard`` is given) a batch at a time; both appear only on clean exit.
        ``outputs`` False: the case results alone (the outputs are the run's recording,
        ``outputs_from_recording``)."""
        self._require_run(run_id)
        paths = {
            table: self.layout.table_path(run_id, table)
            if shard is None
            else self.layout.shard_table_path(run_id, table, shard)
            for table in SHARDED_TABLES
        }
        with ExitStack() as files:
            written = (
                files.enter_context(
                    self.files.parquet_writer(paths["outputs"], schema.SCHEMAS["outputs"])
                )
                if outputs
                else None
            )
            results = files.enter_context(
                self.files.parquet_writer(paths["case_results"], schema.SCHEMAS["case_results"])
            )
            yield ResultsWriter(run_id, written, results)

    def outputs_from_recording(self, run_id: str) -> None:
        """Make the run's stored recording its ``outputs`` table, whole (one file).

        A recorded run scored from columns replays every recorded row as it is
        (``run.evaluate.evaluate_recorded``): its outputs rows are the recording's rows,
        run_id included, in dataset order, so the shards write none and the recording
        is linked (copied where the store cannot link) rather than encoded again."""
        self._require_run(run_id)
        self.files.link(
            self.layout.table_path(run_id, "recorded_outputs"),
            self.layout.table_path(run_id, "outputs"),
        )

    def read_dataset_range(self, run_id: str, start: int, end: int) -> list[Case]:
        """Cases ``start`` to ``end`` (exclusive) in dataset order: one shard's cases."""
        self._require_run(run_id)
        path = self.layout.table_path(run_id, "dataset")
        tables = list(_range_tables(self.files.parquet_file(path), start, end, max(end - start, 1)))
        with collector_paused():
            return [case for table in tables for case in schema.decode_dataset(table)]

    def iter_dataset_range(
        self, run_id: str, start: int, end: int, batch_rows: int
    ) -> Iterator[list[Case]]:
        """Cases ``start`` to ``end`` (exclusive) in dataset order, ``batch_rows`` at a time:
        a shard decodes one batch of its cases at a time, never its whole share."""
        for batch in self.iter_run_batches(run_id, start, end, batch_rows, recorded=False):
            yield batch.cases()

    def has_recorded_outputs(self, run_id: str) -> bool:
        """Whether the run stored its recording (a ``RecordedAdapter`` run: store/recording.py)."""
        return self.files.is_file(self.layout.table_path(run_id, "recorded_outputs"))

    def recorded_failures(self, run_id: str) -> np.ndarray:
        """Whether each row of the run's stored recording is a case failure (its ``error``
        is set), in dataset order."""
        path = self.layout.table_path(run_id, "recorded_outputs")
        errors = self.files.parquet_file(path).read(columns=["error"]).column(0)
        return errors.is_valid().to_numpy(zero_copy_only=False)

    def remove_recorded_outputs(self, run_id: str) -> None:
        self.files.remove(self.layout.table_path(run_id, "recorded_outputs"))

    def write_recorded_outputs(
        self, run_id: str, staged: recording.StagedRecording, cases: Sequence[Case]
    ) -> None:
        """Store the run's recording, row for row beside its dataset (``recording.py``):
        the staged file itself when it lists the dataset's cases in order."""
        ids, turns = recording.dataset_keys(cases)
        self.write_recording_beside(run_id, staged, ids, turns)

    def write_recording_beside(
        self,
        run_id: str,
        staged: recording.StagedRecording,
        case_ids: pa.Array,
        turn_cases: pa.Array,
    ) -> None:
        """``write_recorded_outputs`` for the dataset's case ids and turn flags (a staged
        dataset's columns: ``StagedDataset.case_ids``, ``turn_cases``)."""
        self._require_run(run_id)
        path = self.layout.table_path(run_id, "recorded_outputs")
        if recording.in_dataset_order(staged, case_ids, turn_cases):
            self.files.copy_in(staged.path, path)
            return
        self.files.write_parquet_batches(
            path,
            recording.RECORDED_SCHEMA,
            recording.aligned_batches(staged, case_ids, turn_cases, run_id, WRITE_BATCH_ROWS),
        )

    def iter_run_batches(
        self,
        run_id: str,
        start: int,
        end: int,
        batch_rows: int,
        *,
        recorded: bool = True,
        columns: Sequence[str] | None = None,
    ) -> Iterator[RunBatch]:
        """Rows ``start`` to ``end`` (exclusive) of the run's dataset and, when the run
        stored one, of its recording, as aligned Arrow tables of about ``batch_rows`` rows.

        Only the row groups holding those rows are read. A conversation cut by a batch's
        end moves whole into the next batch: its turns run together, in order (CONTRACT
        section 16). ``recorded`` False: the dataset alone. ``columns``: only those
        columns of either table (``parquet_columns``); the batches read the rest when
        asked (``RunBatch.whole``).
        """
        self._require_run(run_id)
        dataset_file = self.files.parquet_file(self.layout.table_path(run_id, "dataset"))
        dataset = _range_tables(
            dataset_file,
            start,
            end,
            batch_rows,
            None if columns is None else parquet_columns(dataset_file, columns),
        )
        outputs: Iterator[pa.Table | None] = iter(lambda: None, 0)
        if recorded and self.has_recorded_outputs(run_id):
            outputs_file = self.files.parquet_file(
                self.layout.table_path(run_id, "recorded_outputs")
            )
            outputs = _range_tables(
                outputs_file,
                start,
                end,
                batch_rows,
                None if columns is None else parquet_columns(outputs_file, columns),
            )
        reader = None
        if columns is not None:

            def reader(first: int, stop: int) -> RunBatch:
                return self.run_rows(run_id, first, stop, recorded=recorded)

        held: RunBatch | None = None
        position = start
        for cases, replayed in zip(dataset, outputs, strict=False):
            batch = RunBatch(cases, replayed, position, reader)
            position += batch.rows
            if held is not None:
                batch, held = held.joined(batch), None
            cut = _unfinished_conversation_row(batch.dataset)
            if cut < batch.rows:
                batch, held = batch.sliced(0, cut), batch.sliced(cut, batch.rows)
            if batch.rows:
                yield batch
        if held is not None:
            yield held

    def run_rows(self, run_id: str, start: int, end: int, *, recorded: bool = True) -> RunBatch:
        """Rows ``start`` to ``end`` (exclusive) of the run's dataset and recording, whole."""
        batches = list(
            self.iter_run_batches(run_id, start, end, max(end - start, 1), recorded=recorded)
        )
        if not batches:
            return RunBatch(schema.DATASET_SCHEMA.empty_table(), None, start)
        batch = batches[0]
        for later in batches[1:]:
            batch = batch.joined(later)
        return batch

    def dataset_unit_starts(self, run_id: str) -> list[int] | None:
        """The row of each unit's first case (a single case, or a conversation's turns:
        ``model.units``), or None when the run's dataset holds no conversation."""
        self._require_run(run_id)
        path = self.layout.table_path(run_id, "dataset")
        parquet = self.files.parquet_file(path)
        if "conversation_id" not in parquet.schema_arrow.names:
            return None
        column = parquet.read(columns=["conversation_id"]).column(0)
        if column.null_count == len(column):
            return None
        starts, previous = [], None
        for row, conversation in enumerate(column.to_pylist()):
            if conversation is None or conversation != previous:
                starts.append(row)
            previous = conversation
        return starts

    def case_result_files(self, run_id: str) -> list[str]:
        """The paths or URLs of the run's ``case_results`` files (one per shard)."""
        parts = self.table_parts(run_id, "case_results")
        if not parts:
            self._require_run(run_id)
            raise FileNotFoundError(f"run {run_id!r} has no case_results table yet")
        return [self.layout.url(part) for part in parts]

    def tally_case_results(self, run_id: str) -> result_tally.ResultTally:
        """Counts and scored values of the run's results, by one SQL pass (result_tally)."""
        return result_tally.tally_files(self.layout, self.case_result_files(run_id))

    def failed_case_share(self, run_id: str) -> tuple[int, int]:
        """(cases with a case failure or judge error, cases with results)."""
        return result_tally.failed_case_share(self.layout, self.case_result_files(run_id))

    def iter_case_results(self, run_id: str, batch_rows: int = WRITE_BATCH_ROWS):
        """The run's case results in stored order (shard by shard), ``batch_rows`` at a
        time, so a summary never holds the whole run's results as objects."""
        parts = self.table_parts(run_id, "case_results")
        if not parts:
            self._require_run(run_id)
            raise FileNotFoundError(f"run {run_id!r} has no case_results table yet")
        for part in parts:
            first_row = 0
            for batch in self.files.parquet_file(part).iter_batches(batch_size=batch_rows):
                try:
                    with collector_paused():
                        decoded = schema.decode_case_results(pa.Table.from_batches([batch]))
                except schema.UnknownStatus as exc:
                    raise exc.located(self.layout.url(part), first_row) from None
                first_row += batch.num_rows
                yield from decoded

    def write_dataset(self, run_id: str, cases: Sequence[Case]) -> None:
        self._write(run_id, "dataset", schema.encode_dataset(run_id, cases))

    def write_staged_dataset(self, run_id: str, staged: StagedDataset) -> None:
        """Store a dataset the run's dataset step read and validated (``dataset_table.py``):
        the file it wrote for this run as it stands, if any."""
        if staged.file is None or staged.file.run_id != run_id:
            self._write(run_id, "dataset", staged.stored(run_id))
            return
        self._require_run(run_id)
        self.files.copy_in(staged.file.path, self.layout.table_path(run_id, "dataset"))

    def read_dataset(self, run_id: str) -> list[Case]:
        with collector_paused():
            return schema.decode_dataset(self._read(run_id, "dataset"))

    def write_outputs(self, run_id: str, outputs: Sequence[CaseOutput]) -> None:
        self._write_batched(run_id, "outputs", schema.encode_outputs, outputs)

    def read_outputs(self, run_id: str) -> list[CaseOutput]:
        with collector_paused():
            return schema.decode_outputs(self._read(run_id, "outputs"))

    def write_case_results(self, run_id: str, results: Sequence[MetricResult]) -> None:
        self._write_batched(run_id, "case_results", schema.encode_case_results, results)

    def read_case_results(self, run_id: str) -> list[MetricResult]:
        with collector_paused():
            return schema.decode_case_results(self._read(run_id, "case_results"))

    def case_results_frame(self, run_id: str) -> pd.DataFrame:
        """The run's case results with the ``case_results`` view's columns."""
        table = schema.conform(self._read(run_id, "case_results"), schema.CASE_RESULTS_SCHEMA)
        return table.to_pandas()

    def write_summaries(self, run_id: str, summaries: Sequence[Any]) -> None:
        """``summaries``: ``MetricSummary`` objects, or any objects or dicts with its fields."""
        self._write(run_id, "metric_summaries", schema.encode_summaries(run_id, summaries))

    def summaries(self, run_id: str) -> list[dict[str, Any]]:
        """One dict per metric with keys ``schema.SUMMARY_FIELDS``, in written order."""
        return schema.decode_summaries(self._read(run_id, "metric_summaries"))

    # --- reports (CONTRACT section 10) ----------------------------------------------------------

    def write_report(self, run_id: str, html: str, against: str | None = None) -> str:
        """Store a run's HTML report beside its files; returns where it is (path or URL)."""
        self._require_run(run_id)
        path = self.layout.report_path(run_id, against)
        self.files.write_bytes(path, html.encode("utf-8"))
        return self.layout.url(path)

    # --- calibrations (CONTRACT section 12) ----------------------------------------------------

    def write_calibration(
        self, calibration: Any, *, labels_file: str | None, now: datetime | None = None
    ) -> str:
        """Store a ``calibration.labels.RunCalibration`` of a finished run; returns its id.
        ``labels_file`` None: the labels came from the store (``ragproof label``)."""
        if not self.is_finished(calibration.run_id):
            raise RunNotFound(calibration.run_id, "the run has not finished")
        created_at = now or datetime.now(UTC)
        calibration_id = new_run_id(now=created_at)
        table = calibrations.encode_calibration(
            calibration,
            calibration_id,
            created_at,
            None if labels_file is None else redact_secrets(labels_file),
        )
        self.files.write_parquet(
            self.layout.calibration_path(calibration.run_id, calibration_id), table
        )
        self.catalog.log_record("calibrations", calibration.run_id, calibration_id)
        return calibration_id

    def calibrations(self, run_id: str, *, latest: bool = True) -> list[dict[str, Any]]:
        """A run's stored calibration rows (``calibrations`` view columns), in metric order.

        ``latest``: only the newest calibration's row per metric (what ``show``
        and the report put beside the raw mean); otherwise every row, oldest first.
        Empty when the run was never calibrated.
        """
        self._require_run(run_id)
        rows: list[dict[str, Any]] = []
        pattern = str(self.layout.calibrations_dir(run_id) / "*.parquet")
        for path in sorted(self.files.glob(pattern)):
            table = schema.conform(
                self.files.parquet_file(path).read(), calibrations.CALIBRATIONS_SCHEMA
            )
            rows.extend(table.to_pylist())
        if latest:
            rows = list(calibrations.latest_by_metric(rows).values())
            order = {name: i for i, name in enumerate(metric_order({r["metric"] for r in rows}))}
            return sorted(rows, key=lambda r: order[r["metric"]])
        return sorted(rows, key=lambda r: (r["created_at"], r["calibration_id"], r["metric"]))

    # --- human labels (CONTRACT section 22) -------------------------------------------------

    def write_label(self, label: label_files.StoredLabel) -> str:
        """Store one label of a finished run at once, as its own file; returns its id.

        Never rewrites anything, so concurrent annotators (processes, machines)
        never lose a write. A newer label of the same case, metric and annotator
        replaces this one in ``labels`` and the ``labels`` view.
        """
        if not self.is_finished(label.run_id):
            raise RunNotFound(label.run_id, "the run has not finished")
        label_id = label_files.label_id(label)
        self.files.write_parquet(
            self.layout.record_path(label.run_id, label_files.LABELS_FOLDER, label_id),
            label_files.encode_label(label),
        )
        self.catalog.log_record(label_files.LABELS_FOLDER, label.run_id, label_id)
        return label_id

    def label_files(self, run_id: str) -> list[Any]:
        """The run's label files (one listing): each name's stem is the label's id."""
        self._require_run(run_id)
        return self.files.glob(
            str(self.layout.record_dir(run_id, label_files.LABELS_FOLDER) / "*.parquet")
        )

    def read_labels(self, paths: Sequence[Any]) -> list[tuple[str, label_files.StoredLabel]]:
        """``(label id, label)`` of each of ``label_files``' ``paths``."""
        found = []
        # One small object per label: on object storage they are fetched all at once.
        for path, data in zip(paths, self.files.read_many(paths), strict=True):
            table = schema.conform(pq.read_table(pa.BufferReader(data)), label_files.LABELS_SCHEMA)
            found += [(path.stem, label) for label in label_files.decode_labels(table)]
        return found

    def labels(self, run_id: str, annotator: str | None = None) -> list[label_files.StoredLabel]:
        """The run's labels in force (the latest per case, metric and annotator), oldest
        first; only ``annotator``'s when given. Empty when nobody labelled the run."""
        wanted = None if annotator is None else label_files.annotator_digest(annotator)
        paths = [
            path
            for path in self.label_files(run_id)
            if wanted is None or (label_files.id_digests(path.name) or ("",))[0] == wanted
        ]
        return [
            label
            for label in label_files.current_labels(self.read_labels(paths))
            if annotator is None or label.annotator == annotator
        ]

    def labelled(
        self, run_id: str, annotator: str, items: Iterable[tuple[str, str]]
    ) -> set[tuple[str, str]]:
        """Which (case_id, metric) ``items`` ``annotator`` has labelled: one listing of the
        run's labels folder, no file read (a session resumes this way)."""
        wanted = label_files.annotator_digest(annotator)
        done = set()
        for path in self.label_files(run_id):
            digests = label_files.id_digests(path.name)
            if digests is not None and digests[0] == wanted:
                done.add(digests[1])
        return {item for item in items if label_files.item_digest(*item) in done}

    # --- judge bias probes (CONTRACT section 22) --------------------------------------------

    def write_probe(self, result: Any, *, now: datetime | None = None) -> str:
        """Store a ``calibration.probe.ProbeResult`` of a finished run; returns its id."""
        if not self.is_finished(result.run_id):
            raise RunNotFound(result.run_id, "the run has not finished")
        created_at = now or datetime.now(UTC)
        probe_id = new_run_id(now=created_at)
        self.files.write_parquet(
            self.layout.record_path(result.run_id, probes.PROBES, probe_id),
            probes.encode_probe(result, probe_id, created_at),
        )
        self.catalog.log_record(probes.PROBES, result.run_id, probe_id)
        return probe_id

    def probes(self, run_id: str, *, latest: bool = True) -> list[dict[str, Any]]:
        """A run's stored probe rows (``probes`` view columns): the latest probe's only
        (what the app shows), or every probe's, oldest first. Empty if never probed."""
        self._require_run(run_id)
        rows: list[dict[str, Any]] = []
        pattern = str(self.layout.record_dir(run_id, probes.PROBES) / "*.parquet")
        for path in sorted(self.files.glob(pattern)):
            table = schema.conform(self.files.parquet_file(path).read(), probes.PROBES_SCHEMA)
            rows.extend(table.to_pylist())
        rows.sort(key=lambda r: (r["created_at"], r["probe_id"]))
        return probes.latest_probe(rows) if latest else rows

    # --- run records ----------------------------------------------------------------------

    def write_run(self, record: RunRecord) -> None:
        """Finish a run: its record, then its finished entry in the catalog, which makes it
        visible in ``list_runs`` and the views."""
        validate_run_id(record.run_id)
        if record.status not in schema.RECORDED_STATUSES:
            raise ValueError(f"run {record.run_id}: status {record.status!r} is never recorded")
        self._write(record.run_id, "run", schema.encode_run(_redacted_record(record)))
        self.catalog.register_finished(record.run_id)

    @staticmethod
    def stored_run(record: RunRecord) -> RunRecord:
        """``record`` as ``write_run`` stores it and ``get_run`` reads it back (secrets
        masked): what the run's report shows, before the record is written."""
        return schema.decode_runs(schema.encode_run(_redacted_record(record)))[0]

    def get_run(self, run_id: str) -> RunRecord:
        try:
            records = schema.decode_runs(self._read(run_id, "run"))
        except FileNotFoundError:
            raise RunNotFound(run_id, "the run has not finished") from None
        return records[0]

    def finished_run_ids(self) -> list[str]:
        """Ids of the finished runs in force (damaged ones aside), from the catalog."""
        return [r.run_id for r in self.list_runs()]

    def catalog_records(
        self,
        where: str = IN_FORCE,
        *,
        params: Sequence[Any] = (),
        newest_first: bool = False,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunRecord]:
        """Runs as the catalog has them (``catalog_views.RUN_STATES_VIEW``), ``where`` they
        match (``params`` its ``?``), oldest first (by ``started_at``, then ``run_id``) or
        newest first; ``limit`` of them after ``offset``: no other run's record decoded."""
        query = _records_query(where, newest_first, limit, offset)
        return _catalogued(self.catalog_query(query, params))

    def catalog_page(
        self,
        where: str = IN_FORCE,
        *,
        params: Sequence[Any] = (),
        newest_first: bool = True,
        limit: int,
        offset: int = 0,
    ) -> tuple[list[RunRecord], dict[str, int]]:
        """``catalog_records``' page and ``dataset_counts`` read in one connection of the
        catalog (a page's runs and its dataset list with the totals: one reader's cost)."""
        records, counts, _ = self._page(where, params, newest_first, limit, offset, ())
        return records, counts

    def catalog_page_with(
        self,
        where: str = IN_FORCE,
        *,
        params: Sequence[Any] = (),
        newest_first: bool = True,
        limit: int,
        offset: int = 0,
        also: Sequence[tuple[str, Sequence[Any]]],
    ) -> tuple[list[RunRecord], dict[str, int], list[pa.Table]]:
        """``catalog_page`` and the rows of the queries ``also`` (query, params) names, all
        in the same connection of the catalog."""
        return self._page(where, params, newest_first, limit, offset, also)

    def _page(
        self,
        where: str,
        params: Sequence[Any],
        newest_first: bool,
        limit: int,
        offset: int,
        also: Sequence[tuple[str, Sequence[Any]]],
    ) -> tuple[list[RunRecord], dict[str, int], list[pa.Table]]:
        query = _records_query(where, newest_first, limit, offset)
        table, counts, *more = self.catalog_queries([(query, params), (DATASET_COUNTS, ()), *also])
        return _catalogued(table), _counts(counts), more

    @contextmanager
    def catalog_reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """An in-memory connection with the catalog's views over the catalog as it is."""
        views.prepare_store(self.layout)
        sources = reader_sources(self.layout, self.catalog.state())
        with file_reader(self.layout) as con:
            for statement in catalog_ddl(sources):
                con.execute(statement)
            yield con

    def catalog_query(self, query: str, params: Sequence[Any] = ()) -> pa.Table:
        """``query``'s rows over the catalog's views. A catalog file another process
        changed since this reader listed it (a run ending beside it, a compaction) is
        read again from a fresh listing, never taken for damage (``damage.retrying``)."""
        return self.catalog_queries([(query, params)])[0]

    def catalog_queries(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[pa.Table]:
        """Each (query, params)'s rows, over one reader of the catalog as it is."""

        def attempt(found: dict[str, str]) -> list[pa.Table]:
            del found  # the catalog's own views read no run's rows
            with self.catalog_reader() as con:
                return [
                    con.sql(query, params=list(params) or None).to_arrow_table()
                    for query, params in queries
                ]

        return damage.retrying(self.layout, attempt)

    def count_runs(self) -> int:
        table = self.catalog_query(f"SELECT count(*) AS n FROM {RUN_STATES_VIEW}")
        return table.column("n")[0].as_py()

    def dataset_counts(self) -> dict[str, int]:
        """The finished runs in force of each dataset, in one query of the catalog (no run
        record decoded): a page's dataset list and its total."""
        return _counts(self.catalog_query(DATASET_COUNTS))

    def list_runs(self) -> list[RunRecord]:
        """Finished runs in force, oldest first (by ``started_at``, then ``run_id``), from
        the catalog (one query: no run record is read)."""
        return self.catalog_records()

    def catalog_files(self, run_id: str) -> tuple[str, list[dict[str, Any]], str | None] | None:
        """(status, catalogued files, damaged file) of one run as the catalog has it."""
        rows = self.catalog_query(
            f"SELECT status, files, damaged_file FROM {RUN_STATES_VIEW} WHERE run_id = ?",
            [run_id],
        ).to_pylist()
        if not rows:
            return None
        row = rows[0]
        return row["status"], list(row["files"] or []), row["damaged_file"]

    def require_intact(self, run_id: str) -> None:
        """Raise ``RunDamaged`` (exit 5) when the run's files are not what the catalog
        says (missing, or another size); the damage is marked in the catalog when the
        store can take it, so every other reader leaves the run out."""
        if not self.catalog.exists() and not self.run_exists(run_id):
            # Nothing to catalog it from: refused before a reader builds a catalog, so a
            # mistyped id leaves a fresh store as it was.
            raise RunNotFound(run_id)
        found = self.catalog_files(run_id)
        if found is None:
            return
        status, files, damaged = found
        if damaged is not None:
            raise RunDamaged(run_id, damaged)
        if status == "running":
            return
        found_damage = self.catalog.damage(run_id, files)
        if found_damage is not None:
            self.mark_damaged(run_id, found_damage[0])
            raise RunDamaged(run_id, *found_damage)

    def mark_damaged(self, run_id: str, damaged_file: str) -> bool:
        """Mark the run damaged in the catalog; False when the store cannot be written
        (a read-only store: the run is then left out by this process alone)."""
        try:
            self.catalog.mark(run_id, "damaged", damaged_file)
        except OSError:
            return False
        return True

    def check_listed(self, records: Sequence[RunRecord]) -> list[RunRecord]:
        """``records`` with those whose files are damaged shown ``damaged`` (and marked so):
        one stat a file of each finished run listed (their catalogued files read in one
        query), never of the whole store."""
        ids = [r.run_id for r in records if r.status not in ("running", "damaged")]
        listed: dict[str, list[dict[str, Any]]] = {}
        if ids:
            rows = self.catalog_query(
                f"SELECT run_id, files FROM {RUN_STATES_VIEW} WHERE run_id IN (SELECT unnest(?))",
                [ids],
            ).to_pylist()
            listed = {row["run_id"]: list(row["files"] or []) for row in rows}
        checked = []
        for record in records:
            files = listed.get(record.run_id)
            damaged = None if not files else self.catalog.damage(record.run_id, files)
            if damaged is None:
                checked.append(record)
                continue
            self.mark_damaged(record.run_id, damaged[0])
            checked.append(replace(record, status="damaged", damaged_file=damaged[0]))
        return checked

    def damaged_runs(self) -> list[RunRecord]:
        """Runs the catalog has found damaged (``damaged_file`` says which file)."""
        return self.catalog_records("status = 'damaged'")

    def last_completed_run(
        self,
        dataset: str,
        adapter: str,
        before_run_id: str | None = None,
        run_settings: Mapping[str, Any] | None = None,
    ) -> RunRecord | None:
        """The latest ``completed`` run of ``dataset`` with ``adapter``: the regression baseline.

        With ``run_settings`` (a run's ``[run]`` settings as stored in its
        ``config_json``), only runs scored the same way count: equal ``k``,
        ``source_match`` and metric selection (``BASELINE_SETTINGS``); a run at
        k = 3 is no baseline for one at k = 5. With ``before_run_id``, only runs
        that started before that run count. Its start is taken from its run
        record, or, while it is still running, from ``started_at`` (ISO 8601)
        in its manifest; without either, every other run counts.
        """
        candidates = [
            r
            for r in self.list_runs()
            if r.status == "completed"
            and r.dataset == dataset
            and r.adapter == adapter
            and (run_settings is None or same_scoring(stored_run_settings(r), run_settings))
        ]
        if before_run_id is not None:
            cutoff = self._started_at(before_run_id)
            candidates = [
                r
                for r in candidates
                if r.run_id != before_run_id and (cutoff is None or r.started_at < cutoff)
            ]
        return candidates[-1] if candidates else None

    def _started_at(self, run_id: str) -> datetime | None:
        if self.is_finished(run_id):
            return self.get_run(run_id).started_at
        started = self.read_manifest(run_id).get("started_at")
        if not isinstance(started, str):
            return None
        moment = datetime.fromisoformat(started)
        if moment.utcoffset() is None:
            raise ValueError(f"run {run_id!r}: manifest started_at {started!r} has no time zone")
        return moment
