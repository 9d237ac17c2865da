import pytest
import torch

from rewardmill.transforms.sampling import seeded
from rewardmill.transforms.sampling.seeded import TOP_P_WINDOW, SeededSampler, draw, sorted_top_p_drop, top_p_drop

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


def _peaked(rows: int, vocab: int, seed: int) -> torch.Tensor:
    """Probabilities shaped like a policy's: a few likely tokens and a long tail."""
    gen = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(rows, vocab, generator=gen) * 4, dim=-1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_draws_are_torch_multinomial_per_row(seed):
    # the sampler's tokens before batched drawing were torch.multinomial(row, 1, generator=row's own): still are
    probs = _peaked(6, 3000, seed)
    probs[2, 100:] = 0.0  # a row cut by top-k/top-p
    seeds = [seed * 100 + r for r in range(6)]
    expected = [
        torch.multinomial(probs[r], 1, generator=torch.Generator().manual_seed(s))[0] for r, s in enumerate(seeds)
    ]
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    assert draw(probs, generators).tolist() == torch.stack(expected).tolist()


def test_a_nan_row_is_refused_like_torch_multinomial():
    probs = _peaked(2, 10, 0)
    probs[1, 3] = float("nan")
    with pytest.raises(RuntimeError, match="nan"):
        draw(probs, [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)])


def _tied(rows: int, vocab: int) -> torch.Tensor:
    probs = torch.full((rows, vocab), 1.0)
    probs[:, :4] = 8.0  # four equal top tokens: top_p 0.5 cuts between two of them
    return probs / probs.sum(-1, keepdim=True)


def _top3(rows: int, vocab: int, seed: int) -> torch.Tensor:
    probs = _peaked(rows, vocab, seed).masked_fill(torch.arange(vocab) >= 3, 0.0)
    return probs / probs.sum(-1, keepdim=True)


def _logits(rows: int, vocab: int, seed: int) -> torch.Tensor:
    return torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed))


CUTS = [
    (_peaked(8, 5000, 0), 0.95),  # nucleus inside the window: decided without a sort
    (_peaked(8, 5000, 1), 0.5),
    (_peaked(3, 5000, 5), 1e-6),  # only the first token
    (_peaked(8, 5000, 2), 0.999),  # nuclei of ~1000 tokens: full sort
    (torch.softmax(_logits(4, 5000, 0) * 0.1, -1), 0.9),  # flat: nucleus larger than the window, full sort
    (_tied(3, 40), 0.5),  # equal probabilities on both sides of the cut: full sort
    (torch.softmax(torch.round(_logits(6, 2000, 1) * 8) / 4, -1), 0.9),  # many equal values
    (_peaked(5, TOP_P_WINDOW // 4, 3), 0.95),  # vocabulary smaller than the window
    (_top3(5, 5000, 4), 0.99),  # top-k zeros, nucleus = the whole support: the cut lands on a zero
    (torch.cat([_peaked(2, 5000, 6), torch.softmax(_logits(2, 5000, 2) * 0.1, -1)]), 0.95),  # mixed batch
]


@pytest.mark.parametrize("probs, top_p", CUTS)
def test_top_p_cut_equals_the_full_sort(probs, top_p):
    assert torch.equal(top_p_drop(probs, top_p), sorted_top_p_drop(probs, top_p))


def test_small_nuclei_are_cut_without_a_sort(monkeypatch):
    def no_sort(*_):
        raise AssertionError("sorted")

    monkeypatch.setattr(seeded, "sorted_top_p_drop", no_sort)
    for probs, top_p in CUTS[:3]:
        seeded.top_p_drop(probs, top_p)
