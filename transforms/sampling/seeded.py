"""Per-row seeded sampling for transformers `generate`, plus log-probability accounting.

Plain `generate(do_sample=True)` draws every row of a batch from one global RNG, so a sample depends on which
prompts share its batch. This processor gives each row its own `torch.Generator`, samples the token itself
(temperature, top-k, top-p, then a multinomial draw) and forces greedy decoding to pick it. A rollout is then a
function of (prompt, policy, sampling params, index, seed) only, which is what its id and cache key claim.
"""

import torch


class SeededSampler:
    """A LogitsProcessor: returns scores whose argmax is the sampled token; accumulates raw logprobs."""

    def __init__(self, seeds: list[int], temperature: float, top_k: int, top_p: float, eos_token_ids: list[int]):
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p
        self.eos = torch.tensor(sorted(set(eos_token_ids)))
        rows = len(seeds)
        self.logprob_sum = torch.zeros(rows, dtype=torch.float64)
        self.n_tokens = torch.zeros(rows, dtype=torch.long)
        self.done = torch.zeros(rows, dtype=torch.bool)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores = scores.float()
        raw_logprobs = torch.log_softmax(scores, dim=-1)
        warped = scores / self.temperature
        if self.top_k > 0:
            kth = torch.topk(warped, min(self.top_k, warped.shape[-1]), dim=-1).values[:, -1:]
            warped = warped.masked_fill(warped < kth, float("-inf"))
        probs = torch.softmax(warped, dim=-1)
        if self.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
            # keep the smallest prefix whose mass reaches top_p (the first token is always kept)
            drop_sorted = (sorted_probs.cumsum(-1) - sorted_probs) >= self.top_p
            drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
            probs = probs.masked_fill(drop, 0.0)
        chosen = torch.empty(probs.shape[0], dtype=torch.long)
        for row, generator in enumerate(self.generators):
            chosen[row] = torch.multinomial(probs[row], 1, generator=generator)[0]
        live = ~self.done
        self.logprob_sum += torch.where(live, raw_logprobs.gather(1, chosen[:, None])[:, 0].double(), 0.0)
        self.n_tokens += live.long()
        self.done |= torch.isin(chosen, self.eos)
        forced = torch.full_like(scores, float("-inf"))
        forced.scatter_(1, chosen[:, None], 0.0)
        return forced
