"""RolloutCache: what it keys on, that it samples only what is missing, and that a batch survives a crash."""

import pickle

import pytest

from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.params import Sample, SamplingParams

SP = SamplingParams(n=2, temperature=0.8, max_new_tokens=16, seed=3)


def prompt(pid: str, text: str = "What is 2 + 2?") -> dict:
    return {"prompt_id": pid, "messages": [{"role": "user", "content": text}], "task": "math"}


class CountingGenerate:
    """Stands in for a model: sample j of prompt p is f"{p}/{j}/{calls}", so a reused sample is recognizable."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, prompts):
        self.calls.append([p["prompt_id"] for p in prompts])
        call = len(self.calls)
        return [
            [Sample(j, 7, f"{p['prompt_id']}/{j}/{call}", 3, "stop", -1.0 / 3 - j) for j in range(SP.n)]
            for p in prompts
        ]


def test_samples_only_missing_prompts_and_returns_cached_ones_unchanged(tmp_path):
    cache = RolloutCache(tmp_path, "f" * 64, "transformers", SP)
    gen = CountingGenerate()
    first = cache.sample([prompt("a"), prompt("b")], gen)
    second = cache.sample([prompt("b"), prompt("c"), prompt("a")], gen)
    assert gen.calls == [["a", "b"], ["c"]]  # one generate call per batch, for the missing prompt only
    assert second[0] == first[1] and second[2] == first[0]
    assert [s.completion for s in second[1]] == ["c/0/2", "c/1/2"]
    assert (cache.generated, cache.reused) == (3, 2)


def test_a_flushed_batch_survives_the_process(tmp_path):
    """Every batch is flushed: a new process (a resumed stage) reuses it, floats round-trip exactly."""
    gen = CountingGenerate()
    samples = RolloutCache(tmp_path, "f" * 64, "transformers", SP).sample([prompt("a")], gen)
    resumed = pickle.loads(pickle.dumps(RolloutCache(tmp_path, "f" * 64, "transformers", SP)))
    assert resumed.sample([prompt("a")], gen) == samples and len(gen.calls) == 1
    assert samples[0][0].logprob_sum == -1.0 / 3  # not rounded by JSON


@pytest.mark.parametrize(
    "change",
    [
        {"fingerprint": "e" * 64},  # another policy
        {"backend": "vllm"},  # another sampler
        {"sampling": SamplingParams(n=2, temperature=0.8, max_new_tokens=16, seed=4)},  # another seed
        {"sampling": SamplingParams(n=2, temperature=0.7, max_new_tokens=16, seed=3)},  # another temperature
        {"sampling": SamplingParams(n=2, temperature=0.8, max_new_tokens=32, seed=3)},  # longer completions
        {"text": "What is 2 + 3?"},  # another prompt text under the same id (never reuse a stale sample)
    ],
)
def test_anything_a_sample_depends_on_is_a_miss(tmp_path, change):
    gen = CountingGenerate()
    RolloutCache(tmp_path, "f" * 64, "transformers", SP).sample([prompt("a")], gen)
    other = RolloutCache(
        tmp_path,
        change.get("fingerprint", "f" * 64),
        change.get("backend", "transformers"),
        change.get("sampling", SP),
    )
    other.sample([prompt("a", change.get("text", "What is 2 + 2?"))], gen)
    assert len(gen.calls) == 2 and other.reused == 0


def test_an_entry_with_fewer_samples_than_n_is_sampled_again(tmp_path):
    gen = CountingGenerate()
    cache = RolloutCache(tmp_path, "f" * 64, "transformers", SP)
    key = cache.key_of(prompt("a"))
    cache._store.put(key, [Sample(0, 7, "only one", 2, "stop", -1.0)])  # a foreign or damaged entry
    assert [s.completion for s in cache.sample([prompt("a")], gen)[0]] == ["a/0/1", "a/1/1"]


def test_without_a_folder_it_only_counts(tmp_path):
    gen = CountingGenerate()
    cache = RolloutCache(None, "f" * 64, "transformers", SP)
    cache.sample([prompt("a")], gen)
    cache.sample([prompt("a")], gen)
    assert len(gen.calls) == 2 and (cache.generated, cache.reused) == (2, 0)
    assert not list(tmp_path.iterdir())
