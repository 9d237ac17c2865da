"""The plan's charge for one judge call: at the model's price, and at the batch discount for a backend that batches."""

import pytest

from rewardmill.transforms.judges.client import BackendConfig, BatchConfig, JudgeRequest, Sampling
from rewardmill.transforms.planning.judge_calls import CallRecorder
from rewardmill.transforms.planning.spend import Price, Prices, StagePlan
from rewardmill.transforms.planning.tokens import TokenCounter

PRICES = Prices(models={"big": Price(input=2.0, output=8.0)})
REQUEST = JudgeRequest(({"role": "user", "content": "x" * 400},), Sampling(max_tokens=100))


@pytest.mark.parametrize(("batch", "share"), [(None, 1.0), (BatchConfig(), 0.5), (BatchConfig(discount=0.25), 0.25)])
def test_a_batch_backends_calls_cost_its_discount(batch, share):
    plan = StagePlan("label@judge", "rollouts")
    recorder = CallRecorder(plan, PRICES, TokenCounter(None))
    recorder.charge(BackendConfig(kind="openai", model="big", base_url="http://127.0.0.1:1/v1", batch=batch), REQUEST)
    (spend,) = plan.groups.values()
    full = (spend.tokens_in * 2.0 + spend.tokens_out * 8.0) / 1e6
    assert spend.tokens_in == 101 and spend.tokens_out == 100 and spend.cost == pytest.approx(full * share)
