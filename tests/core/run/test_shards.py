from __future__ import annotations

import pytest

from ragproof_core.judge.ledger import JudgeLedger
from ragproof_core.run.shards import (
    ShardReport,
    merge_reports,
    shard_budget,
    shard_ranges,
    shard_share,
    unit_shard_ranges,
)


def test_shard_ranges_are_contiguous_in_dataset_order_larger_first() -> None:
    assert shard_ranges(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert shard_ranges(6, 1) == [(0, 6)]
    assert shard_ranges(2, 3) == [(0, 1), (1, 2), (2, 2)]
    with pytest.raises(ValueError, match="at least 1"):
        shard_ranges(5, 0)


def test_concurrency_and_budget_are_split_across_shards() -> None:
    assert [shard_share(16, 3, i) for i in range(3)] == [6, 5, 5]
    assert [shard_share(2, 3, i) for i in range(3)] == [1, 1, 1]  # at least one each
    assert shard_budget(0.9, 3) == pytest.approx(0.3)
    assert shard_budget(None, 3) is None


def test_reports_add_up_and_a_budget_stop_in_any_shard_stops_the_run() -> None:
    ledger = JudgeLedger(model="m", prompt_hashes={"p": "h"}, requests=2, cache_hits=1)
    reports = [
        ShardReport(
            1,
            3,
            1,
            "aborted:budget",
            JudgeLedger(
                model="m", prompt_hashes={"p": "h"}, requests=5, repairs=1, cost_usd=0.25
            ).to_dict(),
        ),
        ShardReport(0, 4, 0, "completed", ledger.to_dict()),
    ]
    totals = merge_reports(reports)
    assert (totals.status, totals.cases, totals.case_failures) == ("aborted:budget", 7, 1)
    assert totals.ledger == JudgeLedger(
        model="m", prompt_hashes={"p": "h"}, requests=7, repairs=1, cache_hits=1, cost_usd=0.25
    )
    assert merge_reports(reports[1:]).status == "completed"


def test_shards_cut_between_conversations_never_inside_one() -> None:
    # Rows: s1 | c1#1 c1#2 c1#3 | c2#1 | s2 (unit starts 0, 1, 4, 5).
    starts = [0, 1, 4, 5]
    assert unit_shard_ranges(6, 2, starts) == [(0, 4), (4, 6)]
    assert unit_shard_ranges(6, 3, starts) == [(0, 4), (4, 5), (5, 6)]
    assert unit_shard_ranges(6, 4, starts) == [(0, 1), (1, 4), (4, 5), (5, 6)]
    # Without conversations every case is a unit: the plain ranges.
    assert unit_shard_ranges(7, 3, None) == shard_ranges(7, 3)
