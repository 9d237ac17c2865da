"""The transformers backend on the real default model."""

import pytest

from rewardmill.transforms.sampling.params import SamplingParams
from rewardmill.transforms.sampling.transformers_generate import generate_samples, load_policy

PROMPTS = [
    [{"role": "user", "content": "What is 2 + 3? Put the final answer in \\boxed{}."}],
    [{"role": "user", "content": "Name a colour."}],
    [{"role": "user", "content": "Tom has 4 apples and gets 5 more. How many apples does he have?"}],
]
SP = SamplingParams(n=2, temperature=0.8, top_p=0.95, max_new_tokens=12, seed=7)


@pytest.fixture(scope="module")
def policy(policy_dir):
    return load_policy(str(policy_dir))


def test_samples_do_not_depend_on_batch_mates(policy):
    batched = generate_samples(policy, PROMPTS, ["a", "b", "c"], SP)
    alone = generate_samples(policy, PROMPTS[1:2], ["b"], SP)
    assert [s.completion for s in batched[1]] == [s.completion for s in alone[0]]
    assert [s.n_tokens for s in batched[1]] == [s.n_tokens for s in alone[0]]


def test_samples_are_reproducible_and_seed_sensitive(policy):
    first = generate_samples(policy, PROMPTS[:1], ["a"], SP)[0]
    again = generate_samples(policy, PROMPTS[:1], ["a"], SP)[0]
    other = generate_samples(policy, PROMPTS[:1], ["a"], SamplingParams(**{**SP.__dict__, "seed": 8}))[0]
    assert [(s.completion, s.logprob_sum) for s in first] == [(s.completion, s.logprob_sum) for s in again]
    assert [s.completion for s in first] != [s.completion for s in other]


def test_sample_fields(policy):
    samples = generate_samples(policy, PROMPTS, ["a", "b", "c"], SP)
    assert [len(per) for per in samples] == [2, 2, 2]
    for per in samples:
        assert [s.index for s in per] == [0, 1]
        for s in per:
            assert 1 <= s.n_tokens <= SP.max_new_tokens
            assert s.finish_reason in ("stop", "length")
            if s.finish_reason == "length":  # cut at the budget; "stop" may also land exactly on it
                assert s.n_tokens == SP.max_new_tokens
            assert s.logprob_sum < 0
            assert "<|im_end|>" not in s.completion


def test_a_turn_of_an_episode_is_a_sample_of_its_conversation_and_seed(policy):
    """generate_turns: one sample per conversation, seeded per row; sample j of generate_samples is the turn with
    the same text and seed, so a multi-turn episode's first turn equals the single-turn sample."""
    from rewardmill.transforms.sampling.params import sample_seed
    from rewardmill.transforms.sampling.transformers_generate import generate_turns

    single = generate_samples(policy, PROMPTS[:2], ["a", "b"], SP)
    seeds = [sample_seed(SP.seed, "a", 1), sample_seed(SP.seed, "b", 0)]
    turns = generate_turns(policy, PROMPTS[:2], seeds, SP)
    assert [(t.completion, t.n_tokens, t.seed) for t in turns] == [
        (s.completion, s.n_tokens, s.seed) for s in (single[0][1], single[1][0])
    ]
    longer = [*PROMPTS[0], {"role": "assistant", "content": "5"}, {"role": "user", "content": "Are you sure?"}]
    (alone,) = generate_turns(policy, [longer], seeds[:1], SP)
    (batched,) = generate_turns(policy, [longer, PROMPTS[2]], [seeds[0], 3], SP)[:1]
    assert (alone.completion, alone.n_tokens) == (batched.completion, batched.n_tokens)
