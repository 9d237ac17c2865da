"""The card's "Cost per accepted row": every config with a recorded spend, its tokens and dollars per row, its split
by stage, and what the figures are not (upper bounds, unpriced models, stages that recorded nothing)."""

from rewardmill.transforms.export.spend import spend_section
from rewardmill.transforms.planning.spent import per_row


def spend(tokens_in: int, tokens_out: int, cost: float, **extra) -> dict:
    return {"requests": 2, "tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost, **extra}


def test_every_config_gets_its_dollars_per_row_and_the_split_by_stage():
    sampled, judged = spend(100, 300, 0.004), spend(400, 0, 0.002, unpriced_models=["gpt-x"])
    manifests = {
        "pairs": {"spend": per_row({"rollouts": sampled, "label@judge": judged}, 4)},
        "prm": {"spend": per_row({"rollouts": sampled, "steps@mc": spend(50, 50, 0.0, upper_bound=True)}, 0)},
        "rl": {"spend": per_row({"rollouts": sampled, "label@judge": judged, "label@old": None}, 3)},
        "_rewards": {},
    }
    text = spend_section(manifests)
    assert "## Cost per accepted row" in text
    assert "| `pairs` | 4 | 200.0 | $0.001500 | 4 | $0.006000 |" in text
    assert "| `rl` | 3 | 266.7 | $0.002000 | 4 | $0.006000 |" in text
    assert "| `prm` | 0 | - | - | 4 | $0.004000 |" in text  # no accepted row: no per-row figure, the money still spent
    assert "| `pairs` | `label@judge` | 100.0 | $0.000500 |" in text
    assert "Upper bounds (a plan without caches, outputs at their limit): steps@mc." in text
    assert "No price for gpt-x" in text and "Not recorded (built before stages recorded their spend): label@old" in text


def test_no_recorded_spend_no_section():
    assert spend_section({"pairs": {"rows": 3}}) == ""
