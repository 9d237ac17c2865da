"""VLLMJudgeClient on vLLM's CPU build with the real default model (the session's one engine): the same judgments
the transformers client reads, G-Eval and P(yes) from vLLM's logprobs, seeds, failures, pickling."""

import dataclasses
import pickle

import pytest

from rewardmill.transforms.judges.backends import make_client
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, Sampling
from rewardmill.transforms.judges.guarded_client import GuardedJudgeClient
from rewardmill.transforms.judges.likert import build_pointwise, geval_score
from rewardmill.transforms.judges.reference import build_correctness, response_p_yes
from rewardmill.transforms.judges.vllm_client import VLLMJudgeClient, vllm_judge_kwargs

RATE = "Rate the answer '4' to 'What is 2+2?' from 1 to 5. Reply with one digit."


SHORT = Sampling(max_tokens=6)


def ask(content: str, sampling: Sampling = SHORT) -> JudgeRequest:
    return JudgeRequest(({"role": "user", "content": content},), sampling)


@pytest.fixture(scope="module")
def vllm_judge(vllm_engine, policy_dir) -> VLLMJudgeClient:
    guarded = make_client(BackendConfig(kind="vllm", model=str(policy_dir)))
    client = guarded.inner  # make_client guards every client against special-token strings (guarded_client.py)
    assert isinstance(guarded, GuardedJudgeClient) and isinstance(client, VLLMJudgeClient)
    assert client._load() is vllm_engine  # the session's engine
    return client


def test_sampling_kwargs():
    assert vllm_judge_kwargs(ask("x")) == {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 6}
    seeded = vllm_judge_kwargs(ask("x", Sampling(temperature=1.0, n=2, seed=3, top_logprobs=5)))
    assert seeded["n"] == 2 and seeded["logprobs"] == 5 and seeded["seed"] >= 0
    assert vllm_judge_kwargs(ask("y", Sampling(temperature=1.0, seed=3)))["seed"] != seeded["seed"]  # per request


def test_greedy_matches_the_transformers_judge_and_counts_tokens(vllm_judge, local_judge):
    request = ask("What is 2+2? Answer briefly.", Sampling(max_tokens=8))
    ours = vllm_judge.complete([request])[0]
    batched = vllm_judge.complete([ask("Say hi", request.sampling), request])[1]
    theirs = local_judge.complete([request])[0]
    assert ours.error is None and ours.text and batched.text == ours.text
    assert ours.prompt_tokens == theirs.prompt_tokens  # the same prompt tokens reach both backends
    assert ours.text == theirs.text  # greedy on float32: the same answer
    assert ours.completion_tokens == theirs.completion_tokens
    assert vllm_judge.usage()["requests"] >= 3 and vllm_judge.usage()["prompt_tokens"] > 2 * ours.prompt_tokens
    assert vllm_judge.model_id.startswith("vllm|") and vllm_judge.model_id != local_judge.model_id  # cached apart


def test_top_logprobs_feed_geval_and_p_yes_like_the_transformers_judge(vllm_judge, local_judge):
    sampling = Sampling(max_tokens=3, top_logprobs=5)
    greedy = vllm_judge.complete([ask(RATE, sampling)])[0]
    positions = greedy.completions[0].logprobs
    stopped = greedy.completions[0].finish_reason == "stop"
    assert positions is not None and len(positions) == greedy.completion_tokens - stopped  # the stop token is no text
    for position in positions:
        values = list(position.top.values())
        assert values == sorted(values, reverse=True) and 1 <= len(values) <= 5
        assert next(iter(position.top)) == position.token and position.top[position.token] == position.logprob
    reference = local_judge.complete([ask(RATE, sampling)])[0].completions[0].logprobs
    assert positions[0].top == pytest.approx(reference[0].top, abs=1e-3)  # the same raw distribution

    rate = build_pointwise("What is 2+2?", "4", "correctness")
    pointwise = JudgeRequest(rate, Sampling(max_tokens=8, top_logprobs=5))
    yes_no = JudgeRequest(build_correctness("What is 2+2?", "4"), Sampling(max_tokens=4, top_logprobs=5))
    rated, judged = vllm_judge.complete([pointwise, yes_no])
    want_rated, want_judged = local_judge.complete([pointwise, yes_no])
    ours, theirs = geval_score(rated.completions[0].logprobs), geval_score(want_rated.completions[0].logprobs)
    assert (ours is None) == (theirs is None)
    if ours is not None:
        assert ours.expected == pytest.approx(theirs.expected, abs=1e-2)
    p, want = response_p_yes(judged), response_p_yes(want_judged)
    assert (p is None) == (want is None) and (p is None or p == pytest.approx(want, abs=1e-2))


def test_seeded_samples_are_reproducible_and_independent_of_batch_mates(vllm_judge):
    sampling = Sampling(temperature=1.0, max_tokens=6, n=3, seed=7)
    target = ask("Describe the sea in a few words.", sampling)
    alone = vllm_judge.complete([target])[0]
    mates = [ask("Say hi", sampling), ask("Name a fruit.", dataclasses.replace(sampling, n=2, seed=3))]
    batched = vllm_judge.complete([mates[0], target, mates[1]])[1]
    assert len(alone.completions) == 3 and [c.text for c in batched.completions] == [c.text for c in alone.completions]
    assert len({c.text for c in alone.completions}) > 1  # n samples, not n copies
    reseeded = vllm_judge.complete([ask("Describe the sea in a few words.", dataclasses.replace(sampling, seed=8))])
    assert reseeded[0].completions != alone.completions


def test_a_malformed_conversation_fails_alone_and_pickling_ships_settings(vllm_judge):
    broken = JudgeRequest(({"role": "user"},), Sampling(max_tokens=4))  # no content: the chat template raises
    bad, good = vllm_judge.complete([broken, ask("Say hi")])
    assert bad.completions == () and bad.error.startswith("UndefinedError")
    assert good.error is None and good.text
    copy = pickle.loads(pickle.dumps(vllm_judge))
    assert copy._llm is None and copy.usage()["requests"] == 0 and copy.model_id == vllm_judge.model_id
    assert copy.complete([ask("Say hi")])[0].text == good.text


def test_backend_config_with_engine_settings_stays_hashable():
    """Judge labelers key their clients by backend config: the `vllm` kwargs dict must not make it unhashable."""
    config = BackendConfig(kind="vllm", vllm={"gpu_memory_utilization": 0.4})
    assert {config: 1}[BackendConfig(kind="vllm", vllm={"gpu_memory_utilization": 0.4})] == 1
    assert config != BackendConfig(kind="vllm")
