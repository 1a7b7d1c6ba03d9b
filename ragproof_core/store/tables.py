"""Each stored table declared once: its columns' names, Arrow types, nullability and
descriptions (CONTRACT section 6).

Everything else derives from these declarations: the Parquet schemas
(``schema.SCHEMAS``), the DuckDB views' column lists (``views``), the column
schemas the Dagster UI shows (``ragproof_assets``), and the run record's
encoding (``schema.encode_run``/``decode_runs``, whose ``RunRecord`` fields a
test ties to the ``run`` table's). Descriptions are not written into the
Parquet files: the stored schemas stay exactly as they were.

Every table starts with ``run_id`` so the views can glob the files of all runs
without parsing paths. Columns are only ever added at the end, never renamed
or retyped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa


@dataclass(frozen=True, slots=True)
class Column:
    """One stored column. ``field`` names the ``RunRecord`` attribute a run column holds
    when it differs from the column (``judge_usage`` is stored as ``judge_usage_json``);
    ``json``, when set, says the attribute is stored as JSON text and is what a file
    written before the column existed reads as."""

    name: str
    type: pa.DataType
    description: str
    nullable: bool = True
    field: str | None = None
    json: str | None = None

    @property
    def attribute(self) -> str:
        return self.field or self.name

    @property
    def arrow(self) -> pa.Field:
        return pa.field(self.name, self.type, nullable=self.nullable)


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    description: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([c.arrow for c in self.columns])

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"{self.name} has no column {name!r}")


def _run_id(what: str) -> Column:
    return Column("run_id", pa.string(), f"{what} (= the Dagster partition key).", nullable=False)


CHUNK_TYPE = pa.struct(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("score", pa.float64()),
        pa.field("metadata_json", pa.string()),
    ]
)
CHUNK_LIST_TYPE = pa.list_(pa.field("item", CHUNK_TYPE, nullable=False))
_UTC = pa.timestamp("us", tz="UTC")

DATASET = Table(
    "dataset",
    "The run's cases, as validated from the dataset file (CONTRACT section 1).",
    (
        _run_id("Evaluation run"),
        Column("id", pa.string(), "Case id from the dataset.", nullable=False),
        Column("question", pa.string(), "The question put to the pipeline.", nullable=False),
        Column("kind", pa.string(), "qa | unanswerable | injection | poisoning.", nullable=False),
        Column(
            "expected_source_ids",
            pa.list_(pa.string()),
            "Chunk or document ids that answer the question; NULL if not given.",
        ),
        Column("expected_answer", pa.string(), "Reference answer; NULL if not given."),
        Column("adversarial_payload", pa.string(), "The injected payload of an adversarial case."),
        Column("metadata_json", pa.string(), "The case's metadata object, as JSON."),
        Column(
            "expected_source_grades_json",
            pa.string(),
            "expected_source_ids given as an object of grades, as JSON (zeros included); "
            "NULL for a list. expected_source_ids then holds the ids graded >= 1.",
        ),
        Column(
            "expected_tools_json",
            pa.string(),
            "The tool calls the case expects, as a JSON list of {name, arguments}; "
            "NULL if not given (CONTRACT section 17).",
        ),
        Column("tool_match", pa.string(), "exact | in_order | any_order (NULL: in_order)."),
        Column(
            "expected_hops",
            pa.list_(pa.list_(pa.string())),
            "The gold source ids of the 1st, 2nd, ... retrieval step; NULL if not given.",
        ),
        Column(
            "conversation_id",
            pa.string(),
            "A conversation's turn (CONTRACT section 16): the conversation's id; "
            "NULL for a single case.",
        ),
        Column("turn", pa.int32(), "The turn's 1-based number in its conversation; NULL if none."),
        Column("turns", pa.int32(), "How many turns its conversation has; NULL if none."),
        Column(
            "poison_marker",
            pa.string(),
            "A poisoning case's marker, planted in a false chunk only (CONTRACT section 23); "
            "NULL if not given.",
        ),
        Column(
            "allowed_restricted_ids",
            pa.list_(pa.string()),
            "The restricted chunk or document ids the case's user may be shown "
            "(CONTRACT section 23); NULL if not given.",
        ),
        Column(
            "nuggets_json",
            pa.string(),
            "The facts the answer should state, as a JSON list of {text, vital}; "
            "NULL if not given (CONTRACT section 20).",
        ),
    ),
)

# CONTRACT section 27: each of a case's run.repeats calls is a trial, stored as rows of
# its own. A file written before the column existed reads as NULL, the views as 1.
TRIAL_TEXT = "The trial, 1 to run.repeats (1 in a run without repeats; NULL in older files)."

# answer_text is null exactly when the adapter produced no Answer (Answer.text
# is a str), so it doubles as the "has answer" flag.
OUTPUTS = Table(
    "outputs",
    "What the pipeline under test returned for each case.",
    (
        _run_id("Evaluation run"),
        Column("case_id", pa.string(), "Case id from the dataset.", nullable=False),
        Column("answer_text", pa.string(), "The answer; NULL when the adapter gave none."),
        Column("citations", pa.list_(pa.string()), "Chunk ids the answer cites; NULL if none."),
        Column("answer_chunks", CHUNK_LIST_TYPE, "Chunks the answer was generated from."),
        Column("retrieved", CHUNK_LIST_TYPE, "Retrieved chunks, ranked; NULL if not exposed."),
        Column("error", pa.string(), "The case failure, if the adapter raised."),
        Column(
            "latency_s",
            pa.float64(),
            "Seconds the pipeline took: a live adapter call's wall time, or the latency_s a "
            "recording reports; NULL when a recording reports none.",
        ),
        Column(
            "steps_json",
            pa.string(),
            "The agent's steps as a JSON list (CONTRACT section 17); NULL when the answer "
            "reported none.",
        ),
        Column("input_tokens", pa.int64(), "The answer's usage.input_tokens; NULL if not given."),
        Column("output_tokens", pa.int64(), "The answer's usage.output_tokens; NULL if not given."),
        Column("cost_usd", pa.float64(), "The answer's usage.cost_usd; NULL if not given."),
        Column("trial", pa.int32(), TRIAL_TEXT),
    ),
)

# The run's copy of a recording (CONTRACT section 2), written by the dataset step of a
# run replaying recorded outputs: the ``outputs`` columns, row i what the recording holds
# for the dataset's case i (store/recording.py). Not a view: ``outputs`` is what ran.
RECORDED_OUTPUTS = Table(
    "recorded_outputs",
    "The recorded outputs a RecordedAdapter run replays, validated once, in dataset order.",
    OUTPUTS.columns,
)

CASE_RESULTS = Table(
    "case_results",
    "One row per case and metric: status, value, reason, raw judge reply.",
    (
        _run_id("Evaluation run"),
        Column("case_id", pa.string(), "Case id from the dataset.", nullable=False),
        Column("metric", pa.string(), "Metric name, as in metrics.md.", nullable=False),
        Column(
            "status",
            pa.string(),
            "scored | skipped | not_applicable | judge_error | error",
            nullable=False,
        ),
        Column("value", pa.float64(), "Score in [0, 1]; NULL unless scored."),
        Column("reason", pa.string(), "Why it was not scored, or the error text."),
        Column("judge_raw_json", pa.string(), "The judge's reply, verbatim."),
        Column("trial", pa.int32(), TRIAL_TEXT),
    ),
)

# The per-metric counts of a summary, in column order.
SUMMARY_COUNTS: tuple[str, ...] = ("scored", "skipped", "errored", "not_applicable", "judge_errors")

METRIC_SUMMARIES = Table(
    "metric_summaries",
    "One row per run and metric: mean, nearest-rank p50 and p95, and the counts.",
    (
        _run_id("Evaluation run"),
        Column("metric", pa.string(), "Metric name, as in metrics.md.", nullable=False),
        Column("mean", pa.float64(), "Mean of scored cases; NULL if none."),
        Column("p50", pa.float64(), "Nearest-rank median; NULL if none."),
        Column("p95", pa.float64(), "Nearest-rank 95th percentile; NULL if none."),
        Column("scored", pa.int64(), "Cases scored.", nullable=False),
        Column("skipped", pa.int64(), "Cases the metric does not apply to.", nullable=False),
        Column("errored", pa.int64(), "Case failures plus judge errors.", nullable=False),
        Column("not_applicable", pa.int64(), "E.g. answers with no claims.", nullable=False),
        Column("judge_errors", pa.int64(), "Judge errors alone.", nullable=False),
        # CONTRACT section 27: a run with repeats (NULL without).
        Column(
            "cases",
            pa.int64(),
            "With repeats: cases with a scored trial (the mean is over their per-case means, "
            "p50 and p95 too; the counts above count trials).",
        ),
        Column("within_case_sd", pa.float64(), "sqrt of the mean within-case sample variance."),
        Column("between_case_sd", pa.float64(), "Sample sd of the per-case means."),
        Column("icc", pa.float64(), "ICC(1) of the scores by case (unbalanced n0)."),
        Column("pass_k", pa.int64(), "k of pass@k and pass^k (a 0/1 metric only)."),
        Column("pass_at_k", pa.float64(), "Mean over cases of 1 - C(n - c, k) / C(n, k)."),
        Column("pass_hat_k", pa.float64(), "pass^k: mean over cases of C(c, k) / C(n, k)."),
        Column("flaky_cases", pa.int64(), "Cases whose scored trials are 0.5 or more apart."),
        Column("ci_low", pa.float64(), "Cluster bootstrap 95% interval of the mean, low."),
        Column("ci_high", pa.float64(), "Cluster bootstrap 95% interval of the mean, high."),
        Column(
            "judge_repeated",
            pa.int64(),
            "With judge repeats: the metric's trials whose judge requests were repeated.",
        ),
        Column(
            "judge_self_agreement",
            pa.float64(),
            "Krippendorff's alpha (interval) of the judge's repeats over them; NULL when "
            "undefined.",
        ),
    ),
)

# Timestamps are UTC instants (Parquet isAdjustedToUTC); DuckDB reads them as
# TIMESTAMP WITH TIME ZONE and displays them in the session's TimeZone.
RUN = Table(
    "run",
    "One row per finished run: the run record (the `runs` view).",
    (
        _run_id("Evaluation run"),
        Column("dataset", pa.string(), "The dataset file, as given.", nullable=False),
        Column("adapter", pa.string(), "Adapter as package.module:Name.", nullable=False),
        Column(
            "status",
            pa.string(),
            "completed | aborted:budget | aborted:judge | interrupted | failed as the run "
            "recorded it; in the runs view also running and damaged (CONTRACT section 29).",
            nullable=False,
        ),
        Column("started_at", _UTC, "When the run started (UTC).", nullable=False),
        Column("finished_at", _UTC, "When the run record was written (UTC).", nullable=False),
        Column("judge_model", pa.string(), "LiteLLM model(s), comma-separated; NULL if none."),
        Column(
            "prompt_hashes",
            pa.string(),
            "JSON object: judge prompt name -> sha256.",
            nullable=False,
            json="{}",
        ),
        Column(
            "config_json",
            pa.string(),
            "The run manifest as JSON: settings, adapter, dataset hash.",
            nullable=False,
        ),
        Column("cost_usd", pa.float64(), "Judge cost in USD; NULL when nothing priced the judge."),
        Column("cases", pa.int64(), "Cases evaluated.", nullable=False),
        Column("case_failures", pa.int64(), "Cases whose adapter call failed.", nullable=False),
        Column("judge_requests", pa.int64(), "Judge requests sent.", nullable=False),
        Column("cache_hits", pa.int64(), "Judge verdicts read from the cache.", nullable=False),
        Column("judge_mode", pa.string(), "per_metric | combined; NULL without a judge."),
        Column("judge_repairs", pa.int64(), "Judge replies repaired by a retry."),
        Column("judge_errors", pa.int64(), "Judge calls that gave no usable verdict."),
        Column("judge_input_tokens", pa.int64(), "Judge input tokens."),
        Column("judge_output_tokens", pa.int64(), "Judge output tokens."),
        # CONTRACT section 15: judge usage per (metric, model) and the jury's agreement, as JSON.
        Column(
            "judge_usage_json",
            pa.string(),
            "JSON list: judge usage per (metric, model).",
            field="judge_usage",
            json="[]",
        ),
        Column(
            "judge_agreement_json",
            pa.string(),
            "JSON object: a jury's agreement per metric.",
            field="judge_agreement",
            json="{}",
        ),
        # CONTRACT section 24: judge failures named, and the reply format asked for.
        Column(
            "judge_first_error",
            pa.string(),
            "Why the first judged question without a verdict failed; for a run "
            "aborted:judge, why the judge was unavailable. NULL if none.",
        ),
        Column(
            "judge_response_format",
            pa.string(),
            "json_schema | json_object: how judge replies were asked for; NULL if none.",
        ),
        Column(
            "adapter_calls_json",
            pa.string(),
            "JSON object: the adapter's calls by method (retrieve, answer).",
            field="adapter_calls",
            json="{}",
        ),
        # CONTRACT section 25: the run's identity.
        Column("name", pa.string(), "The run's name ([run] name, --name); NULL if none."),
        Column(
            "tags",
            pa.string(),
            "JSON object: the run's tags ([run.tags], --tag KEY=VALUE).",
            nullable=False,
            json="{}",
        ),
        Column(
            "config_digest",
            pa.string(),
            "sha256 of the run's [run] settings, metric selection, adapter target and "
            "redacted adapter options; NULL for runs stored before it existed.",
        ),
        # CONTRACT section 28: secrets masked where they entered the run.
        Column(
            "secrets_masked",
            pa.int64(),
            "Strings in which the run masked a secret value as *** (0: none).",
        ),
    ),
)

# One file per calibration of a run (store/calibrations.py); its own view, not in TABLES.
CALIBRATIONS = Table(
    "calibrations",
    "One row per calibration and judge metric: judge, human and bias-corrected (PPI) means.",
    (
        _run_id("Calibrated run"),
        Column("calibration_id", pa.string(), "Id of this calibration.", nullable=False),
        Column("created_at", _UTC, "When the calibration was stored (UTC).", nullable=False),
        Column(
            "labels_file",
            pa.string(),
            "The human labels file, as given; NULL: the labels stored with `ragproof label`.",
        ),
        Column("metric", pa.string(), "Judge metric name.", nullable=False),
        Column("n_judged", pa.int64(), "Cases the judge scored.", nullable=False),
        Column("n_labelled", pa.int64(), "Of those, cases with a human label.", nullable=False),
        Column("judge_mean", pa.float64(), "Judge-only mean."),
        Column("judge_ci_low", pa.float64(), "Judge-only interval, low bound."),
        Column("judge_ci_high", pa.float64(), "Judge-only interval, high bound."),
        Column("human_mean", pa.float64(), "Human-only mean."),
        Column("human_ci_low", pa.float64(), "Human-only interval, low bound."),
        Column("human_ci_high", pa.float64(), "Human-only interval, high bound."),
        Column("ppi_mean", pa.float64(), "Bias-corrected (PPI) mean."),
        Column("ppi_ci_low", pa.float64(), "PPI interval, low bound."),
        Column("ppi_ci_high", pa.float64(), "PPI interval, high bound."),
        Column("unmatched_labels", pa.int64(), "Labels matching no judged case.", nullable=False),
        # CONTRACT section 22: set when the labels came from the store, NULL from a file.
        Column("annotators", pa.int64(), "People who labelled the metric's cases."),
        Column("annotator_alpha", pa.float64(), "Krippendorff's alpha among the annotators."),
        Column(
            "judge_alpha",
            pa.float64(),
            "Krippendorff's alpha with the judge as one more annotator.",
        ),
    ),
)

# One file per label (store/labels.py); its own view, not in TABLES. A label is never
# rewritten: a person who changes their mind adds a newer one, and readers take the
# latest per (run, case, metric, annotator).
LABELS = Table(
    "labels",
    "One row per human label of a judge-scored case (CONTRACT section 22).",
    (
        _run_id("Labelled run"),
        Column("case_id", pa.string(), "Case id from the dataset.", nullable=False),
        Column("metric", pa.string(), "Judge metric the person scored.", nullable=False),
        Column("score", pa.float64(), "The person's score in [0, 1].", nullable=False),
        Column(
            "annotator", pa.string(), "Who scored it, as they named themselves.", nullable=False
        ),
        Column("labelled_at", _UTC, "When the label was written (UTC).", nullable=False),
    ),
)

# One file per probe of a run's judge (store/probes.py); its own view, not in TABLES.
PROBES = Table(
    "probes",
    "One row per probe, judge metric and perturbation: how many verdicts changed band.",
    (
        _run_id("Probed run"),
        Column("probe_id", pa.string(), "Id of this probe.", nullable=False),
        Column("created_at", _UTC, "When the probe was stored (UTC).", nullable=False),
        Column("judge_model", pa.string(), "The judge that was probed.", nullable=False),
        Column("metric", pa.string(), "Judge metric.", nullable=False),
        Column(
            "perturbation",
            pa.string(),
            "verbosity | position | self_reference",
            nullable=False,
        ),
        Column("cases", pa.int64(), "Perturbed cases the judge scored.", nullable=False),
        Column("changed", pa.int64(), "Of those, verdicts that changed band.", nullable=False),
        Column("share", pa.float64(), "changed / cases; NULL when cases is 0."),
        Column("ci_low", pa.float64(), "Wilson 95% interval of the share, low bound."),
        Column("ci_high", pa.float64(), "Wilson 95% interval of the share, high bound."),
        Column(
            "unscored",
            pa.int64(),
            "Perturbed cases with no score (judge error, no claims).",
            nullable=False,
        ),
        Column("sample", pa.int64(), "Cases sampled per metric (--sample).", nullable=False),
        Column("seed", pa.int64(), "The sample's seed (--seed).", nullable=False),
    ),
)

# The catalog (store/catalog.py): one row per run entry. A run's start writes an ``open``
# entry, its end replaces it with the ``finished`` one (the run record's columns, then
# the catalog's); a reader that finds its files damaged, and gc or quarantine, add a
# ``damaged`` or ``removed`` entry. The latest open or finished entry of a run is the one
# in force, and only its rows of the other catalog tables are read.
CATALOG_FILE_TYPE = pa.struct(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("sha256", pa.string(), nullable=False),
    ]
)
CATALOG_RUNS = Table(
    "catalog_runs",
    "One row per catalog entry of a run: its record as the runs view shows it, and its files.",
    (
        *(
            # An open entry has no end yet, a record written before a column has no value.
            replace(c, nullable=c.name != "run_id")
            for c in RUN.columns
        ),
        Column(
            "entry",
            pa.string(),
            "The entry's id (UTC time, then random): the latest open or finished one is in force.",
            nullable=False,
        ),
        Column("kind", pa.string(), "open | finished | damaged | removed", nullable=False),
        Column(
            "files",
            pa.list_(pa.field("item", CATALOG_FILE_TYPE, nullable=False)),
            "A finished run's files, relative to its folder, with their size and sha256.",
        ),
        Column("damaged_file", pa.string(), "The file found missing, truncated or changed."),
        Column("host", pa.string(), "The machine whose process opened the run."),
        Column("pid", pa.int64(), "That process's id."),
    ),
)

# Each conversation turn of a run's dataset (CONTRACT section 16): what the conversations
# view joins case results with, kept in the catalog so it never reads a whole dataset.
TURNS = Table(
    "turns",
    "One row per conversation turn of a run's dataset.",
    (
        _run_id("Evaluation run"),
        Column("id", pa.string(), "The turn's case id.", nullable=False),
        Column("conversation_id", pa.string(), "Its conversation.", nullable=False),
    ),
)

HEARTBEATS = Table(
    "heartbeats",
    "A running run's last sign of life, renewed every 5 s (CONTRACT section 29).",
    (
        _run_id("Running run"),
        Column("beat_at", _UTC, "When the run's process last wrote it (UTC).", nullable=False),
    ),
)

TABLES: dict[str, Table] = {
    t.name: t for t in (DATASET, OUTPUTS, CASE_RESULTS, METRIC_SUMMARIES, RUN)
}
