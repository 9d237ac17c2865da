"""Continuations on the real default model: seeded per request, independent of batch mates, cached by content."""

import pickle

import pytest

from rewardmill.transforms.sampling.policy import model_identity
from rewardmill.transforms.steps.continuations import (
    CachedContinuer,
    ContinuationSampling,
    PrefixRequest,
    TransformersContinuer,
    VLLMContinuer,
    vllm_continuation_kwargs,
)
from tests.transforms.judges.conftest import one_torch_thread  # noqa: F401  (autouse: generate on one thread)

MESSAGES = ({"role": "user", "content": "Tom has 3 apples and buys 4 more. How many apples does he have?"},)
SAMPLING = ContinuationSampling(max_new_tokens=12, batch_size=2, seed=3)


def request(key: str, prefix: str) -> PrefixRequest:
    return PrefixRequest(key, MESSAGES, prefix)


def test_seeded_per_request_and_independent_of_batch_mates(policy_dir):
    continuer = TransformersContinuer(str(policy_dir), SAMPLING, k=2)
    target = request("r1:0", "Tom starts with 3 apples.")
    alone = continuer.continue_many([target])
    mates = continuer.continue_many([request("r2:0", "He buys"), target, request("r3:1", "3 + 4")])
    assert len(alone) == 1 and len(alone[0]) == 2 and all(isinstance(t, str) for t in alone[0])
    assert mates[1] == alone[0]  # same request, other batch mates (and another batch position): same samples
    assert continuer.continue_many([request("r1:1", "Tom starts with 3 apples.")]) != alone  # the key seeds


def test_cache_makes_a_rerun_generate_nothing(policy_dir, tmp_path):
    fingerprint = model_identity(str(policy_dir))
    first = CachedContinuer(TransformersContinuer(str(policy_dir), SAMPLING, k=2), str(tmp_path), fingerprint)
    requests = [request("r1:0", "Tom starts with 3 apples."), request("r1:1", "Tom starts with 3 apples. He buys 4.")]
    texts = first.continue_many(requests)
    first.close()
    assert first.generated == 4
    again = CachedContinuer(TransformersContinuer(str(policy_dir), SAMPLING, k=2), str(tmp_path), fingerprint)
    assert again.continue_many(requests) == texts and again.generated == 0  # read back from disk, no model call
    other_k = CachedContinuer(TransformersContinuer(str(policy_dir), SAMPLING, k=3), str(tmp_path), fingerprint)
    assert other_k.key_of(requests[0]) != again.key_of(requests[0])  # k (and sampling, policy) are in the key


def test_pickles_without_the_model(policy_dir):
    continuer = TransformersContinuer(str(policy_dir), SAMPLING, k=1)
    continuer.continue_many([request("r:0", "Tom")])
    copy = pickle.loads(pickle.dumps(continuer))
    assert copy._policy is None and copy.sampling == SAMPLING


def test_vllm_continuations_are_seeded_per_request_cached_and_continue_the_prefix(vllm_engine, policy_dir, tmp_path):
    """VLLMContinuer on vLLM's CPU build (the session's engine): the same contract as the transformers continuer."""
    continuer = VLLMContinuer(str(policy_dir), SAMPLING, k=2)
    assert continuer.load() is vllm_engine
    target = request("r1:0", "Tom starts with 3 apples.")
    alone = continuer.continue_many([target])
    mates = continuer.continue_many([request("r2:0", "He buys"), target, request("r3:1", "3 + 4")])
    assert len(alone) == 1 and len(alone[0]) == 2 and all(isinstance(t, str) and t for t in alone[0])
    assert mates[1] == alone[0]  # other batch mates and position: same samples
    assert continuer.continue_many([request("r1:1", "Tom starts with 3 apples.")]) != alone  # the key seeds
    copy = pickle.loads(pickle.dumps(continuer))
    assert copy._llm is None and copy.continue_many([target]) == alone

    fingerprint = model_identity(str(policy_dir))
    cached = CachedContinuer(continuer, str(tmp_path), fingerprint)
    assert cached.continue_many([target]) == alone and cached.generated == 2
    cached.close()
    again = CachedContinuer(VLLMContinuer(str(policy_dir), SAMPLING, k=2), str(tmp_path), fingerprint)
    assert again.continue_many([target]) == alone and again.generated == 0
    transformers_key = CachedContinuer(TransformersContinuer(str(policy_dir), SAMPLING, k=2), None, fingerprint)
    assert transformers_key.key_of(target) != again.key_of(target)  # the backend is in the key


@pytest.mark.parametrize(
    ("top_k", "key", "expected_top_k"),
    [
        (0, "a:0", 0),  # off: vLLM >= 0.10 reads 0 as disabled
        (20, "a:1", 20),
    ],
)
def test_vllm_kwargs(top_k, key, expected_top_k):
    sampling = ContinuationSampling(top_k=top_k, max_new_tokens=7)
    kwargs = vllm_continuation_kwargs(sampling, 4, key)
    assert kwargs["n"] == 4 and kwargs["max_tokens"] == 7 and kwargs["top_k"] == expected_top_k
    assert kwargs["seed"] == vllm_continuation_kwargs(sampling, 4, key)["seed"]  # a function of the key
    assert kwargs["seed"] != vllm_continuation_kwargs(sampling, 4, key + "x")["seed"]


def test_bad_sampling_is_refused():
    with pytest.raises(ValueError, match="temperature"):
        ContinuationSampling(temperature=0)
    with pytest.raises(ValueError, match="batch_size"):
        ContinuationSampling(batch_size=0)


def test_continuations_are_kept_exactly_as_generated(policy_dir):
    """A continuation is glued to its prefix, so its leading space or newline is part of it: stripped, "= 7" and
    "\\n12" would read "= 712" and the extracted answer would change."""
    continuer = TransformersContinuer(str(policy_dir), SAMPLING, k=4)
    prefixes = ["Tom starts with 3 apples.", "He buys 4 more.", "So 3 + 4 = 7."]
    texts = [t for per in continuer.continue_many([request(f"r:{i}", p) for i, p in enumerate(prefixes)]) for t in per]
    assert any(t[:1].isspace() for t in texts), texts  # after a full stop the policy goes on with a space or newline
