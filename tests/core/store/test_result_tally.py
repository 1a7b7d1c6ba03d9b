"""The run's summaries by one SQL pass over its stored results (store/result_tally.py) equal
the object path's (metrics.aggregate.summarize) to the last digit, on a local folder and on
S3 (moto), shards included."""

from __future__ import annotations

import math
import random
from collections import Counter

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragproof_core.metrics.aggregate import P50, P95, ValueCounts, nearest_rank, summarize
from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.metrics.result_columns import ResultColumns
from ragproof_core.model import (
    MetricResult,
    Status,
    case_error,
    judge_error,
    not_applicable,
    scored,
    skipped,
)
from ragproof_core.present.markdown import distributions_markdown, distributions_table
from ragproof_core.store.result_tally import (
    MAX_SHARD_GROUPS,
    UnknownStatus,
    group_results,
    summarize_run,
    tally_groups,
    tally_shard_groups,
)
from ragproof_core.store.run_store import RunStore, result_table

MRR, LATENCY, NDCG = "retrieval.mrr", "system.latency_s", "retrieval.ndcg_at_k"


def mixed_results(case_ids: list[str], seed: int) -> list[MetricResult]:
    """A few distinct values for one metric, a distinct float per case for another (the
    summation path for many distinct values), and every other status."""
    rng = random.Random(seed)
    out: list[MetricResult] = []
    for case_id in case_ids:
        roll = rng.random()
        if roll < 0.05:
            out += [case_error(case_id, m, "adapter raised ValueError") for m in (MRR, LATENCY)]
            continue
        out.append(scored(case_id, MRR, rng.choice([0.0, 1 / 3, 0.5, 1.0])))
        out.append(scored(case_id, LATENCY, rng.lognormvariate(0, 2)))
        if roll < 0.2:
            out.append(skipped(case_id, NDCG, rng.choice(["no expected_source_ids", "no chunks"])))
        elif roll < 0.25:
            out.append(judge_error(case_id, NDCG, "reply failed validation twice"))
        else:
            out.append(scored(case_id, NDCG, rng.random()))
    return out


def shard_store(store: RunStore, run_id: str, shards: list[list[MetricResult]]) -> None:
    store.write_manifest(run_id, {"run_id": run_id})
    for shard, results in enumerate(shards):
        with store.results_writer(run_id, shard=shard) as writer:
            writer.write([], results)


@pytest.mark.parametrize("cases", [7, 6_000])
def test_sql_summaries_equal_the_object_paths_to_the_last_digit(
    local_or_s3_store: RunStore, cases: int
) -> None:
    ids = [f"c{i:05d}" for i in range(cases)]
    shards = [mixed_results(ids[: cases // 2], 1), mixed_results(ids[cases // 2 :], 2)]
    shard_store(local_or_s3_store, "r", shards)
    results = [r for shard in shards for r in shard]
    # Past the rational summation's limit, so the expanded fsum is exercised too.
    assert cases < 100 or len({r.value for r in results if r.metric == LATENCY}) > 4_096
    summaries, tally = summarize_run(local_or_s3_store, "r", METRIC_NAMES)
    assert summaries == summarize(results, METRIC_NAMES)
    assert tally.skip_reasons == Counter(
        (r.metric, r.reason) for r in results if r.status is Status.SKIPPED and r.reason
    )
    assert distributions_table(tally.metrics, tally.values) == distributions_markdown(results)
    failed = {r.case_id for r in results if r.status in (Status.ERROR, Status.JUDGE_ERROR)}
    assert local_or_s3_store.failed_case_share("r") == (len(failed), cases)


def test_counted_values_give_fsums_mean_and_the_nearest_rank() -> None:
    rng = random.Random(3)
    for size in (1, 2, 19, 20, 21, 500):
        values = [rng.choice([0.1, 0.2, 0.7, 1e-17, 3.0]) for _ in range(size)]
        counted = ValueCounts.of(values)
        ordered = sorted(values)
        assert counted.n == size
        # Rationals give fsum's correctly rounded sum (a plain sum of these drifts).
        assert counted.total() == math.fsum(values)
        assert counted.mean() == math.fsum(values) / size
        assert counted.nearest_rank(P50) == nearest_rank(ordered, P50)
        assert counted.nearest_rank(P95) == nearest_rank(ordered, P95)
    assert ValueCounts.empty().mean() is None


def test_an_unknown_stored_status_is_refused(tmp_path) -> None:
    store = RunStore(tmp_path)
    store.write_manifest("r", {"run_id": "r"})
    store.write_case_results("r", [scored("c1", MRR, 1.0)])
    path = store.layout.table_path("r", "case_results")
    table = pq.read_table(path)
    column = table.schema.get_field_index("status")
    bad = pc.replace_substring(table["status"], "scored", "scroed")
    pq.write_table(table.set_column(column, "status", bad), path)
    with pytest.raises(UnknownStatus, match="'scroed'"):
        store.tally_case_results("r")


def test_a_tally_at_hand_gives_the_summaries_a_fresh_pass_gives(store: RunStore) -> None:
    ids = [f"c{i:03d}" for i in range(40)]
    shard_store(store, "r", [mixed_results(ids[:20], 1), mixed_results(ids[20:], 2)])
    tally = store.tally_case_results("r")
    assert summarize_run(store, "r", METRIC_NAMES, tally) == (
        summarize_run(store, "r", METRIC_NAMES)[0],
        tally,
    )


def test_the_shards_own_groups_give_the_tally_of_their_stored_files(store: RunStore) -> None:
    ids = [f"c{i:04d}" for i in range(600)]
    shards = [mixed_results(ids[:300], 1), mixed_results(ids[300:], 2)]
    store.write_manifest("r", {"run_id": "r"})
    kept = []
    for shard, results in enumerate(shards):
        with store.results_writer("r", shard=shard) as writer:
            # Several batches a shard: their groups are added up as they are written.
            for start in range(0, len(results), 250):
                writer.write([], results[start : start + 250])
        kept.append(writer.result_groups())
    stored = store.tally_case_results("r")
    added = tally_shard_groups(kept)
    assert added is not None
    assert dict(added.counts) == dict(stored.counts)
    assert added.skip_reasons == stored.skip_reasons
    assert added.scored.keys() == stored.scored.keys()
    for metric, counted in stored.scored.items():
        assert added.scored[metric].values.tolist() == counted.values.tolist()
        assert added.scored[metric].counts.tolist() == counted.counts.tolist()
    assert summarize_run(store, "r", METRIC_NAMES, added)[0] == summarize(
        [r for shard in shards for r in shard], METRIC_NAMES
    )


def test_a_shard_with_too_many_groups_keeps_none_and_the_files_are_tallied(
    store: RunStore,
) -> None:
    results = [scored(f"c{i:05d}", LATENCY, i / 7) for i in range(MAX_SHARD_GROUPS)]
    store.write_manifest("r", {"run_id": "r"})
    with store.results_writer("r", shard=0) as writer:
        writer.write([], results)
    assert writer.result_groups() is None
    assert tally_shard_groups([writer.result_groups()]) is None
    assert (
        tally_shard_groups([None, {"metric": [], "status": [], "value": [], "reason": [], "n": []}])
        is None
    )


# --- runs in which nothing, or not everything, scores (issue 39, item 1) -------------------

_NOTHING_SCORED = {
    "no rows": [],
    "all skipped": [skipped(f"c{i}", MRR, "no expected_source_ids") for i in range(3)],
    "all errors": [case_error(f"c{i}", m, "adapter raised") for i in range(3) for m in (MRR, NDCG)],
    "all not applicable": [not_applicable(f"c{i}", LATENCY, "not a trace") for i in range(3)],
    "all judge errors": [judge_error(f"c{i}", NDCG, "judge down") for i in range(3)],
}


def plain_tally(results: list[MetricResult]) -> tuple[dict, Counter, dict]:
    """The tally by hand: rows per (metric, status), skips per (metric, reason), and each
    metric's scored values sorted."""
    counts: dict[str, Counter] = {}
    values: dict[str, list[float]] = {}
    for r in results:
        counts.setdefault(r.metric, Counter())[r.status] += 1
        if r.status is Status.SCORED:
            values.setdefault(r.metric, []).append(r.value)
    reasons = Counter((r.metric, r.reason or "") for r in results if r.status is Status.SKIPPED)
    return counts, reasons, {m: sorted(v) for m, v in values.items()}


def assert_tally_is(tally, results: list[MetricResult]) -> None:
    counts, reasons, values = plain_tally(results)
    assert {m: dict(c) for m, c in tally.counts.items()} == {m: dict(c) for m, c in counts.items()}
    assert tally.skip_reasons == reasons
    assert {m: sorted(tally.values(m).expanded()) for m in tally.scored} == values
    summaries, _ = summarize_run(None, "r", METRIC_NAMES, tally)
    assert summaries == summarize(results, METRIC_NAMES)


@pytest.mark.parametrize("shape", list(_NOTHING_SCORED))
def test_a_run_where_nothing_scores_is_tallied_per_shard_gathered_and_from_its_files(
    store: RunStore, shape: str
) -> None:
    results = _NOTHING_SCORED[shape]
    half = len(results) // 2
    store.write_manifest("r", {"run_id": "r"})
    kept = []
    # Two shards, the first possibly with no rows at all, and the stored files read back.
    for shard, part in enumerate((results[:half], results[half:])):
        with store.results_writer("r", shard=shard) as writer:
            writer.write([], part)
        kept.append(writer.result_groups())
        assert_tally_is(tally_shard_groups([writer.result_groups()]), part)
    assert_tally_is(tally_shard_groups(kept), results)
    assert_tally_is(store.tally_case_results("r"), results)
    summaries, _ = summarize_run(store, "r", METRIC_NAMES)
    assert all(s.scored == 0 and s.mean is None and s.p50 is None for s in summaries)


_STATUS_ROWS = st.sampled_from(
    [
        lambda c, m: scored(c, m, 0.5),
        lambda c, m: scored(c, m, 1.0),
        lambda c, m: scored(c, m, 1 / 3),
        lambda c, m: skipped(c, m, "no chunks"),
        lambda c, m: skipped(c, m, ""),
        lambda c, m: not_applicable(c, m, "not a conversation"),
        lambda c, m: judge_error(c, m, "reply failed validation twice"),
        lambda c, m: case_error(c, m, "adapter raised"),
    ]
)
# Each shard: a list of cases, each case a row maker per metric (some metrics missing).
_SHARDS = st.lists(
    st.lists(
        st.dictionaries(st.sampled_from([MRR, NDCG, LATENCY]), _STATUS_ROWS, max_size=3),
        max_size=6,
    ),
    min_size=1,
    max_size=4,
)


def _shard_results(shards) -> list[list[MetricResult]]:
    return [
        [
            make(f"s{s}c{c}", metric)
            for c, case in enumerate(cases)
            for metric, make in sorted(case.items())
        ]
        for s, cases in enumerate(shards)
    ]


@given(shards=_SHARDS)
@settings(max_examples=200, deadline=None)
def test_the_gathered_tally_of_any_mix_of_statuses_and_shards_is_the_plain_one(shards) -> None:
    per_shard = _shard_results(shards)
    groups = [
        group_results(result_table("r", ResultColumns.from_results(part))) for part in per_shard
    ]
    for part, grouped in zip(per_shard, groups, strict=True):
        assert_tally_is(tally_groups(grouped), part)
    gathered = tally_shard_groups([g.to_pydict() for g in groups])
    assert_tally_is(gathered, [r for part in per_shard for r in part])


@given(shards=_SHARDS)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_stored_tally_of_any_mix_of_statuses_and_shards_is_the_plain_one(
    tmp_path_factory, shards
) -> None:
    store = RunStore(tmp_path_factory.mktemp("store"))
    per_shard = _shard_results(shards)
    store.write_manifest("r", {"run_id": "r"})
    for shard, part in enumerate(per_shard):
        with store.results_writer("r", shard=shard) as writer:
            writer.write([], part)
    assert_tally_is(store.tally_case_results("r"), [r for part in per_shard for r in part])
