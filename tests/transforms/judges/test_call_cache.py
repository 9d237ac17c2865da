"""CachedJudgeClient around real clients: the local default model, and an OpenAI client at a closed port."""

import dataclasses
import pickle
from pathlib import Path

import pytest

from rewardmill.transforms.judges.backends import build_client, make_client
from rewardmill.transforms.judges.call_cache import CachedJudgeClient, call_key
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, Sampling
from rewardmill.transforms.judges.guarded_client import GuardedJudgeClient
from rewardmill.transforms.judges.openai_client import OpenAIJudgeClient
from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient
from tests.transforms.judges.fault_proxy import free_port

TINY = Sampling(max_tokens=3, top_logprobs=2)


def ask(content: str, sampling: Sampling = TINY) -> JudgeRequest:
    return JudgeRequest(({"role": "user", "content": content},), sampling)


class Counting:
    """Passes calls to a real client and counts the requests that reach it."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = inner.model_id
        self.sent: list[JudgeRequest] = []

    def complete(self, requests):
        self.sent += requests
        return self.inner.complete(requests)

    def usage(self):
        return self.inner.usage()

    def close(self):
        pass


def test_second_call_is_answered_from_the_cache(local_judge, tmp_path):
    inner = Counting(local_judge)
    cache = CachedJudgeClient(inner, tmp_path, flush_every=1)
    requests = [ask("Say hi"), ask("Say hi"), ask("Name a fruit.")]  # a duplicate is sent once
    first = cache.complete(requests)
    assert len(inner.sent) == 2 and not any(r.cached for r in first) and first[0] == first[1]

    rerun = CachedJudgeClient(inner, tmp_path)  # a rerun of the stage: reads the segments
    again = rerun.complete(requests)
    assert len(inner.sent) == 2  # nothing sent
    assert all(r.cached for r in again) and [dataclasses.replace(r, cached=False) for r in again] == first
    assert rerun.usage()["cache_hits"] == 3 and rerun.usage()["cache_misses"] == 0


def test_the_key_covers_model_messages_and_sampling():
    request = ask("Say hi")
    assert call_key("m", request) == call_key("m", ask("Say hi"))
    assert call_key("m", request) != call_key("other", request)
    assert call_key("m", request) != call_key("m", ask("Say hi!"))
    assert call_key("m", request) != call_key("m", ask("Say hi", dataclasses.replace(TINY, seed=1)))


def test_unseeded_sampling_is_never_cached(local_judge, tmp_path):
    inner = Counting(local_judge)
    cache = CachedJudgeClient(inner, tmp_path, flush_every=1)
    fresh = ask("Say hi", Sampling(temperature=1.0, max_tokens=2, seed=None))
    cache.complete([fresh])
    cache.complete([fresh])
    assert len(inner.sent) == 2 and not list(tmp_path.rglob("*.jsonl"))


def test_errors_are_not_cached(tmp_path):
    config = BackendConfig(kind="openai", model="m", base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    inner = Counting(OpenAIJudgeClient(config))  # nothing listens there: a real connection error
    cache = CachedJudgeClient(inner, tmp_path, flush_every=1)
    for _ in range(2):
        response = cache.complete([ask("Say hi")])[0]
        assert response.error.startswith("APIConnectionError") and not response.cached
    assert len(inner.sent) == 2 and not list(tmp_path.rglob("*.jsonl"))
    cache.close()


def test_a_killed_stage_loses_only_unflushed_calls(local_judge, tmp_path):
    inner = Counting(local_judge)
    cache = CachedJudgeClient(inner, tmp_path, flush_every=2)
    cache.complete([ask("one"), ask("two"), ask("three")])
    del cache  # killed: no close(), so the third call never reached a segment

    rerun = CachedJudgeClient(inner, tmp_path, flush_every=2)
    responses = rerun.complete([ask("one"), ask("two"), ask("three")])
    assert [r.cached for r in responses] == [True, True, False] and len(inner.sent) == 4
    rerun.close()  # close flushes what is pending
    assert all(r.cached for r in CachedJudgeClient(inner, tmp_path).complete([ask("three")]))
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_make_client_and_pickling(policy_dir, tmp_path, monkeypatch):
    # make_client = guard(build_client): the guard (guarded_client.py) sits outside the call cache
    guarded = make_client(BackendConfig(model=str(policy_dir), cache_dir=str(tmp_path)))
    assert isinstance(guarded, GuardedJudgeClient) and isinstance(guarded.inner, CachedJudgeClient)
    plain = build_client(BackendConfig(model=str(policy_dir)))
    assert isinstance(plain, TransformersJudgeClient)
    cached = build_client(BackendConfig(model=str(policy_dir), cache_dir=str(tmp_path)))
    assert isinstance(cached, CachedJudgeClient) and cached.model_id == plain.model_id
    assert Path(cached.directory).parent == tmp_path
    copy = pickle.loads(pickle.dumps(cached))
    assert copy.model_id == cached.model_id and copy.directory == cached.directory
    assert isinstance(build_client(BackendConfig(kind="openai", base_url="http://localhost:1/v1")), OpenAIJudgeClient)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_client(BackendConfig(kind="openai", model="gpt-x"))
