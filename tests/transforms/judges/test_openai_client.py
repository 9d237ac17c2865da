"""OpenAIJudgeClient against a real OpenAI-compatible server: `transformers serve` on the default model.

Failures that server cannot show on cue (500, 429, a hang) come from fault_proxy.FaultProxy in front of it; every
attempt the proxy does not fail is answered by the real server.
"""

import logging
import pickle
import time

import pytest

from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, Sampling
from rewardmill.transforms.judges.openai_client import OpenAIJudgeClient
from tests.transforms.judges.fault_proxy import HANG, FaultProxy, schedule

TINY = Sampling(max_tokens=2)
SECRET = "sk-judge-test-9f3c2a7e1b5d4c8a"


def ask(content: str, sampling: Sampling = TINY) -> JudgeRequest:
    return JudgeRequest(({"role": "user", "content": content},), sampling)


def client_for(root: str, model, path: str = "/v1", **config) -> OpenAIJudgeClient:
    config = {"kind": "openai", "model": str(model), "base_url": root + path, **config}
    return OpenAIJudgeClient(BackendConfig(**config), backoff=0.01)


def test_real_server_greedy_completion_is_reproducible_and_counted(judge_server, policy_dir):
    client = client_for(judge_server, policy_dir)
    request = ask("Say hi", Sampling(max_tokens=4, top_logprobs=3))
    first = client.complete([request])[0]
    second = pickle.loads(pickle.dumps(client)).complete([request])[0]  # a worker's copy: settings only

    assert first.error is None and first.text and second == first
    completion = first.completions[0]
    assert completion.logprobs is None  # transformers serve ignores `logprobs`: None, not a failure
    assert completion.finish_reason in ("stop", "length") and 0 < first.completion_tokens <= 4
    assert client.usage() == {
        "requests": 1,
        "retries": 0,
        "failures": 0,
        "prompt_tokens": first.prompt_tokens,
        "completion_tokens": first.completion_tokens,
        "concurrency_limit": 1,  # one answer: the limit starts at 1 and needs two to move
        "concurrency_peak": 1,
        "concurrency_decreases": 0,
    }
    assert first.prompt_tokens > 0
    assert client.model_id == f"{judge_server}/v1|{policy_dir}"


def test_n_samples_are_topped_up_when_the_endpoint_ignores_n(judge_server, policy_dir):
    client = client_for(judge_server, policy_dir)
    response = client.complete([ask("Name a color.", Sampling(temperature=0.8, max_tokens=2, n=2, seed=5))])[0]
    assert response.error is None and len(response.completions) == 2
    assert client.usage()["requests"] == 1 and response.prompt_tokens > 0


def test_missing_api_key_fails_at_construction(monkeypatch):
    monkeypatch.delenv("JUDGE_TEST_KEY", raising=False)
    hosted = BackendConfig(
        kind="openai", model="m", base_url="https://judge.example.com/v1", api_key_env="JUDGE_TEST_KEY"
    )
    with pytest.raises(ValueError, match="JUDGE_TEST_KEY"):
        OpenAIJudgeClient(hosted)
    with pytest.raises(ValueError, match="JUDGE_TEST_KEY"):  # no base_url = the hosted OpenAI API
        OpenAIJudgeClient(BackendConfig(kind="openai", model="m", api_key_env="JUDGE_TEST_KEY"))
    local = BackendConfig(kind="openai", model="m", base_url="http://127.0.0.1:8000/v1", api_key_env="JUDGE_TEST_KEY")
    assert OpenAIJudgeClient(local).model_id == "http://127.0.0.1:8000/v1|m"  # local servers need no key


def test_api_key_is_sent_but_never_shown(judge_server, policy_dir, monkeypatch, caplog):
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    with FaultProxy(judge_server, schedule({"who am i": [401]})) as proxy, caplog.at_level(logging.DEBUG):
        client = client_for(proxy.url, policy_dir, api_key_env="JUDGE_TEST_KEY")
        ok, denied = client.complete([ask("Say hi"), ask("who am i")])
    assert proxy.authorizations == [f"Bearer {SECRET}"] * 2  # read from the environment variable
    assert ok.error is None and ok.text
    assert denied.completions == () and denied.error.startswith("AuthenticationError")
    assert proxy.attempts["who am i"] == 1  # a 401 is not retried
    for shown in (repr(client), denied.error, caplog.text, str(client.usage()), pickle.dumps(client).decode("latin1")):
        assert SECRET not in shown and SECRET[-16:] not in shown


def test_transient_failures_are_retried_until_real_completions(judge_server, policy_dir):
    faults = {"one": [500, 429], "two": [HANG], "three": [503]}
    with FaultProxy(judge_server, schedule(faults)) as proxy:
        client = client_for(proxy.url, policy_dir, max_retries=3, request_timeout=8.0, max_concurrency=2)
        responses = client.complete([ask(c) for c in ("one", "two", "three", "four")])
    assert all(r.error is None and r.text and r.completion_tokens > 0 for r in responses)
    assert dict(proxy.attempts) == {"one": 3, "two": 2, "three": 2, "four": 1}
    usage = client.usage()
    assert usage["retries"] == 4 and usage["failures"] == 0 and usage["requests"] == 4


def test_exhausted_retries_give_an_error_response_and_the_rest_succeed(judge_server, policy_dir):
    with FaultProxy(judge_server, schedule({"doomed": [500, 500, 500]})) as proxy:
        client = client_for(proxy.url, policy_dir, max_retries=1)
        doomed, fine = client.complete([ask("doomed"), ask("fine")])
    assert doomed.completions == () and doomed.text is None
    assert doomed.error.startswith("InternalServerError: ") and "injected 500" in doomed.error
    assert fine.error is None and fine.text
    assert proxy.attempts["doomed"] == 2  # the first try and max_retries=1 retry
    usage = client.usage()
    assert (usage["requests"], usage["retries"], usage["failures"]) == (2, 1, 1)


@pytest.mark.parametrize(
    ("faults", "path", "error"),
    [
        ({"bad": [400]}, "/v1", "BadRequestError"),  # injected by the proxy
        ({}, "/nope/v1", "NotFoundError"),  # the real server's own 404
    ],
)
def test_client_errors_are_not_retried(judge_server, policy_dir, faults, path, error):
    with FaultProxy(judge_server, schedule(faults)) as proxy:
        client = client_for(proxy.url, policy_dir, path=path, max_retries=3)
        response = client.complete([ask("bad")])[0]
    assert response.error.startswith(f"{error}: ") and response.completions == ()
    assert proxy.attempts["bad"] == 1 and client.usage()["retries"] == 0


def test_concurrency_never_exceeds_max_concurrency(judge_server, policy_dir):
    with FaultProxy(judge_server) as proxy:
        client = client_for(proxy.url, policy_dir, max_concurrency=2)
        responses = client.complete([ask(f"Count to {i}.") for i in range(5)])
    assert all(r.error is None for r in responses)
    assert proxy.max_in_flight == 2  # the pool was full, and never fuller


@pytest.mark.parametrize(("cap", "at_least", "below"), [(300.0, 1.5, 30.0), (0.2, 0.0, 1.2)])
def test_retry_after_is_honoured_up_to_its_cap(judge_server, policy_dir, cap, at_least, below):
    """Our backoff is 10 ms here; the server asks for 1.5 s and gets them, unless max_retry_after cuts the wait."""
    with FaultProxy(judge_server, schedule({"slow down": ["429:1.5"]})) as proxy:
        client = client_for(proxy.url, policy_dir, max_retries=1, max_retry_after=cap)
        start = time.monotonic()
        (response,) = client.complete([ask("slow down")])
        waited = time.monotonic() - start
    assert response.error is None and proxy.attempts["slow down"] == 2
    assert at_least <= waited < below


def test_tokens_of_successful_calls_count_when_a_later_top_up_fails(judge_server, policy_dir):
    """transformers serve ignores n: the client tops up with another call, which fails here; the first call's
    tokens were spent and are counted."""
    with FaultProxy(judge_server, schedule({"two please": [None, 500, 500]})) as proxy:
        client = client_for(proxy.url, policy_dir, max_retries=1)
        (response,) = client.complete([ask("two please", Sampling(temperature=1.0, max_tokens=4, n=2, seed=1))])
    assert response.error is not None and proxy.attempts["two please"] == 3
    usage = client.usage()
    assert usage["failures"] == 1 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
