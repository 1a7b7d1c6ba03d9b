from __future__ import annotations

import pytest

from ragproof_core.judge.cost import Budget, call_cost, estimate_tokens
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
