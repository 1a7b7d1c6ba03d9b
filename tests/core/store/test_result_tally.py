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

from ragproof_core.metrics.aggregate import P50, P95, ValueCounts, nearest_rank, summarize
from ragproof_core.metrics.registry import METRIC_NAMES
from ragproof_core.model import MetricResult, Status, case_error, judge_error, scored, skipped
from ragproof_core.present.markdown import distributions_markdown, distributions_table
from ragproof_core.store.result_tally import (
    MAX_SHARD_GROUPS,
    UnknownStatus,
    summarize_run,
    tally_shard_groups,
)
from ragproof_core.store.run_store import RunStore

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
