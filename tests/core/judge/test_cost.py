from __future__ import annotations

import pytest

from ragproof_core.judge.cost import Budget, call_cost, estimate_tokens, rounded_usd
from ragproof_core.judge.ledger import JudgeLedger
from ragproof_core.judge.types import BudgetExceeded


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2)])
def test_estimate_tokens_is_four_characters_per_token_rounded_up(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_call_cost_uses_prices_per_million_tokens() -> None:
    assert call_cost(100, 20, 2.0, 10.0) == 0.0004
    assert call_cost(1_000_000, 0, 3.0, 15.0) == 3.0


def test_budget_refuses_a_reservation_that_would_pass_the_limit() -> None:
    budget = Budget(1.0)
    first = budget.reserve(0.25)
    second = budget.reserve(0.5)  # 0.75 in flight
    with pytest.raises(BudgetExceeded, match=r"judge budget of \$1\.000000 reached"):
        budget.reserve(0.5)
    budget.settle(first, 0.25)
    budget.settle(second, 0.5)
    assert budget.spent == 0.75
    assert budget.reserved == 0.0
    budget.reserve(0.25)  # exactly at the limit is allowed
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.01)


def test_unlimited_budget_never_refuses() -> None:
    budget = Budget(None)
    reservation = budget.reserve(1e9)
    budget.settle(reservation, 2e9)
    assert budget.spent == 2e9


def test_a_reservation_settles_once() -> None:
    budget = Budget(1.0)
    reservation = budget.reserve(0.1)
    budget.settle(reservation, 0.0)
    with pytest.raises(ValueError, match="already settled"):
        budget.settle(reservation, 0.0)


def test_dollar_figures_are_rounded_to_a_millionth_of_a_dollar():
    # 87 calls of $0.000123 add up to 0.01070099999999999 in floating point.
    total = sum([0.000123] * 87)
    assert total != 0.010701
    assert rounded_usd(total) == 0.010701
    assert rounded_usd(0.0000004) == 0.0 and rounded_usd(0.0000006) == 0.000001


def test_a_ledger_rounds_its_total_and_per_metric_costs():
    noisy = sum([0.000123] * 87)
    ledger = JudgeLedger(
        model="m",
        requests=87,
        cost_usd=noisy,
        usage=[{"metric": "a", "model": "m", "requests": 87, "cost_usd": noisy}],
    ).with_rounded_cost()
    assert (ledger.cost_usd, ledger.usage[0]["cost_usd"], ledger.requests) == (
        0.010701,
        0.010701,
        87,
    )
