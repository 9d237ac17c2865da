import pytest

from rewardmill.transforms.sampling.params import SamplingParams, prompt_seed, rollout_id, sample_seed


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n": 0},  # no samples
        {"temperature": 0.0},  # greedy gives n identical samples
        {"top_p": 0.0},  # empty nucleus
        {"top_p": 1.5},
        {"top_k": -1},
        {"max_new_tokens": 0},
    ],
)
def test_invalid_sampling_params(kwargs):
    with pytest.raises(ValueError):
        SamplingParams(**kwargs)


def test_sampling_json_is_canonical_and_names_backend():
    a = SamplingParams(n=2, seed=3).to_json("transformers")
    assert a == SamplingParams(seed=3, n=2).to_json("transformers")
    assert a != SamplingParams(n=2, seed=3).to_json("vllm")


def test_rollout_id_changes_with_every_component():
    base = ("p", "fp", "{}", 0, 1)
    ids = {rollout_id(*base)}
    for i in range(len(base)):
        changed = list(base)
        changed[i] = changed[i] + 1 if isinstance(changed[i], int) else changed[i] + "x"
        ids.add(rollout_id(*changed))
    assert len(ids) == len(base) + 1


def test_seeds_are_stable_non_negative_and_distinct():
    assert sample_seed(1, "p", 0) == sample_seed(1, "p", 0)
    seeds = {sample_seed(1, "p", j) for j in range(100)} | {prompt_seed(1, "p"), sample_seed(2, "p", 0)}
    assert len(seeds) == 102 and all(0 <= s < 2**63 for s in seeds)
