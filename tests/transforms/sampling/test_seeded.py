import torch

from rewardmill.transforms.sampling.seeded import SeededSampler

VOCAB = 50


def step(sampler: SeededSampler, logits: torch.Tensor) -> torch.Tensor:
    forced = sampler(torch.zeros((logits.shape[0], 1), dtype=torch.long), logits.clone())
    return forced.argmax(-1)


def test_rows_depend_only_on_their_own_seed():
    torch.manual_seed(0)
    logits = torch.randn(3, VOCAB)
    together = SeededSampler([11, 22, 33], 1.0, 0, 1.0, eos_token_ids=[0])
    alone = SeededSampler([22], 1.0, 0, 1.0, eos_token_ids=[0])
    for _ in range(20):
        assert step(together, logits)[1] == step(alone, logits[1:2])[0]


def test_forced_scores_allow_exactly_one_token():
    logits = torch.randn(2, VOCAB)
    forced = SeededSampler([1, 2], 1.0, 0, 1.0, [0])(torch.zeros((2, 1), dtype=torch.long), logits)
    assert ((forced == 0).sum(-1) == 1).all() and torch.isinf(forced).sum() == 2 * (VOCAB - 1)


def test_top_k_one_and_tiny_top_p_are_greedy():
    logits = torch.randn(4, VOCAB)
    assert torch.equal(step(SeededSampler([1, 2, 3, 4], 1.0, 1, 1.0, [0]), logits), logits.argmax(-1))
    assert torch.equal(step(SeededSampler([1, 2, 3, 4], 1.0, 0, 1e-6, [0]), logits), logits.argmax(-1))


def test_sampling_follows_the_distribution():
    # two tokens with p = 0.8 / 0.2 at temperature 1
    logits = torch.full((1, VOCAB), float("-inf"))
    logits[0, 5], logits[0, 7] = torch.log(torch.tensor(0.8)), torch.log(torch.tensor(0.2))
    sampler = SeededSampler([123], 1.0, 0, 1.0, [0])
    draws = [int(step(sampler, logits)[0]) for _ in range(2000)]
    assert set(draws) == {5, 7}
    assert 0.75 < draws.count(5) / len(draws) < 0.85


def test_logprobs_sum_raw_logprobs_and_stop_after_eos():
    logits = torch.full((1, VOCAB), -1e9)
    logits[0, 0] = 0.0  # eos is the only choice
    sampler = SeededSampler([1], 0.5, 0, 1.0, eos_token_ids=[0])
    step(sampler, logits)
    step(sampler, logits)  # after eos: not counted
    assert sampler.done.tolist() == [True] and sampler.n_tokens.tolist() == [1]
    assert abs(float(sampler.logprob_sum[0])) < 1e-6  # log p(eos) = log 1
