"""What a built stage's output cost (its manifest's `spend`): cache hits charged once at the tokens the model
reported, at the batch discount on a batching backend; calls the cache cannot prove were answered left out; the
sampling's tokens per policy price; per accepted row."""

import dataclasses

import pytest

from rewardmill.transforms.judges.client import BackendConfig, BatchConfig, JudgeRequest, JudgeResponse, Sampling
from rewardmill.transforms.planning.judge_calls import SpendRecorder
from rewardmill.transforms.planning.spend import Price, Prices, StagePlan
from rewardmill.transforms.planning.spent import per_row, rollouts_spend, spend_record
from rewardmill.transforms.planning.tokens import TokenCounter

PRICES = Prices(models={"big": Price(input=2.0, output=8.0)}, local=Price(input=0.5, output=1.0))
ENDPOINT = BackendConfig(kind="openai", model="big", base_url="http://127.0.0.1:1/v1")
GREEDY = JudgeRequest(({"role": "user", "content": "x" * 400},), Sampling(max_tokens=100))
UNSEEDED = JudgeRequest(({"role": "user", "content": "x" * 400},), Sampling(max_tokens=100, temperature=1.0))
ANSWER = JudgeResponse((), prompt_tokens=120, completion_tokens=7)


def recorder() -> SpendRecorder:
    return SpendRecorder(StagePlan("label@judge", "rollouts"), PRICES, TokenCounter(None))


def test_a_cached_answer_is_charged_once_at_the_tokens_the_model_reported():
    spent = recorder()
    for _ in range(3):  # the same call asked by three rows: the run sent it once
        spent.answered(ENDPOINT, GREEDY, "k1", ANSWER)
    assert (spent.plan.send.requests, spent.plan.send.tokens_in, spent.plan.send.tokens_out) == (1, 120, 7)
    assert spent.plan.send.cost == pytest.approx((120 * 2.0 + 7 * 8.0) / 1e6)


def test_a_batching_backends_answers_cost_its_discount():
    spent = recorder()
    spent.answered(dataclasses.replace(ENDPOINT, batch=BatchConfig(discount=0.5)), GREEDY, "k", ANSWER)
    assert spent.plan.send.cost == pytest.approx((120 * 2.0 + 7 * 8.0) / 1e6 * 0.5)


def test_calls_the_cache_cannot_prove_were_answered_are_not_charged_and_unseeded_ones_are_estimated():
    spent = recorder()
    spent.charge(ENDPOINT, GREEDY, "missing")  # cacheable, not cached: failed or never needed
    assert spent.plan.send.requests == 0 and spent.uncached == 1
    spent.charge(ENDPOINT, UNSEEDED, None)  # never cached: sent every time, priced at the plan's estimate
    assert spent.plan.send.requests == 1 and spent.estimated == 1 and spent.plan.send.tokens_out == 100


def test_a_server_that_reports_no_usage_is_estimated():
    spent = recorder()
    spent.answered(ENDPOINT, GREEDY, "k", JudgeResponse((), prompt_tokens=None, completion_tokens=None))
    assert spent.estimated == 1 and spent.plan.send.tokens_out == 100


def test_sampling_spend_per_policy_price():
    messages = [{"role": "user", "content": "x" * 40}]
    rows = [
        {"prompt_id": "p", "messages": messages, "n_tokens": 10, "policy": {"name": "local"}},
        {"prompt_id": "p", "messages": messages, "n_tokens": 30, "policy": {"name": "local"}},
        {"prompt_id": "p", "messages": messages, "n_tokens": 5, "policy": {"name": "served"},
         "turns": [{"role": "assistant"}, {"role": "tool"}, {"role": "assistant"}]},
    ]  # fmt: skip
    models = {"local": ("transformers", "models/policy", 1.0), "served": ("openai", "big", 1.0)}
    spend = rollouts_spend(rows, models, PRICES, TokenCounter(None))  # no tokenizer: ~4 characters a token
    assert spend["requests"] == 4 and spend["tokens_in"] == 3 * 11 and spend["tokens_out"] == 45
    assert spend["cost_usd"] == pytest.approx(round((22 * 0.5 + 40 * 1.0 + 11 * 2.0 + 5 * 8.0) / 1e6, 6))


def test_per_accepted_row_divides_every_stage_and_names_what_is_missing_or_bounded():
    sampled = {"requests": 8, "tokens_in": 100, "tokens_out": 300, "cost_usd": 0.004}
    judged = {"requests": 4, "tokens_in": 400, "tokens_out": 0, "cost_usd": 0.002, "unpriced_models": ["m"]}
    stepped = {**spend_record_of(10, 10, 0.0), "upper_bound": True}
    spend = per_row({"rollouts": sampled, "label@judge": judged, "steps@mc": stepped, "label@old": None}, 4)
    assert spend["total"] == {"requests": 13, "tokens": 820, "cost_usd": 0.006}
    assert spend["per_row"]["tokens"] == 205 and spend["per_row"]["cost_usd"] == 0.0015
    assert spend["per_row"]["by_stage"]["label@judge"] == {"tokens": 100, "cost_usd": 0.0005}
    assert spend["upper_bound"] and spend["unpriced_models"] == ["m"] and spend["not_recorded"] == ["label@old"]
    assert per_row({"rollouts": sampled}, 0)["per_row"]["cost_usd"] is None  # no row: no per-row figure


def spend_record_of(tokens_in: int, tokens_out: int, cost: float) -> dict:
    from rewardmill.transforms.planning.spend import Spend

    return spend_record(Spend(1, tokens_in, tokens_out, cost))
