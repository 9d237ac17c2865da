"""Budget admission: whole prompts in id order, each while the total still fits; cached prompts are free."""

import pytest

from rewardmill.transforms.planning.budget import Budget, admit
from rewardmill.transforms.planning.spend import Price, Prices, Spend, priced


def groups(**spends: tuple[int, int, float]) -> dict[str, Spend]:
    return {name: Spend(requests, tokens, 0, cost) for name, (requests, tokens, cost) in spends.items()}


@pytest.mark.parametrize(
    ("budget", "admitted"),
    [
        (Budget(), {"a", "b", "c"}),  # no cap
        (Budget(max_requests=5), {"a", "c"}),  # b (4) would make 7; c (1) still fits after a (2)
        (Budget(max_requests=2), {"a"}),  # exactly at the cap is within it
        (Budget(max_requests=1), {"c"}),  # a does not fit alone; c does
        (Budget(max_tokens=150), {"a", "c"}),  # tokens: a 100 + c 10
        (Budget(max_cost=0.5), {"a", "c"}),  # cost: a 0.25 + c 0.0
        (Budget(max_requests=0), set()),  # nothing may be sent
    ],
)
def test_admit_takes_whole_prompts_in_id_order_while_they_fit(budget, admitted):
    spends = groups(a=(2, 100, 0.25), b=(4, 400, 1.0), c=(1, 10, 0.0))
    result = admit(spends, budget)
    assert result.admitted == admitted
    assert result.excluded == set(spends) - admitted
    assert result.spend.requests == sum(spends[g].requests for g in admitted)
    assert result.left.requests == sum(spends[g].requests for g in result.excluded)


def test_max_cost_needs_a_price_for_every_endpoint_model():
    spends = {"a": priced(None, "gpt-x", 1, 10, 10)}
    with pytest.raises(ValueError, match="gpt-x"):
        admit(spends, Budget(max_cost=1.0))
    assert admit(spends, Budget(max_requests=1)).admitted == {"a"}  # other caps do not need prices


def test_budget_rejects_negative_caps():
    with pytest.raises(ValueError, match="max_tokens"):
        Budget(max_tokens=-1)


def test_prices_per_million_tokens_endpoint_models_by_name_local_models_at_the_local_price():
    prices = Prices(models={"big": Price(input=2.0, output=8.0)}, local=Price(input=0.1, output=0.1))
    spend = priced(prices.price("openai", "big"), "big", 1, 1_000_000, 500_000)
    assert spend.cost == pytest.approx(2.0 + 4.0)
    assert prices.price("openai", "unknown") is None  # an endpoint model without a price
    assert prices.price("transformers", "models/policy") == Price(0.1, 0.1)
    assert prices.price("openai", "big", discount=0.5) == Price(1.0, 4.0)  # a batch backend's calls
    assert prices.price("openai", "unknown", discount=0.5) is None
    with pytest.raises(ValueError):
        Price(input=-1.0)
