"""transformers backend of the rollouts stage: Beam RunInference handler around transformers_generate.py's batched,
per-row seeded sampling of n completions per prompt (CPU or GPU)."""

import logging
from typing import Any

from rewardmill.transforms.io import timings
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.handler import PolicyHandler
from rewardmill.transforms.sampling.params import Sample, SamplingParams
from rewardmill.transforms.sampling.transformers_generate import (
    LoadedPolicy,
    generate_samples,
    generate_turns,
    load_policy,
    token_counter,
)

log = logging.getLogger("rewardmill")


class TransformersPolicyHandler(PolicyHandler):
    """The policy on local transformers (CPU or GPU), per-row seeded (`SeededSampler`)."""

    def __init__(
        self,
        model_dir: str,
        sampling: SamplingParams,
        device: str = "cpu",
        total_prompts: int | None = None,
        cache: RolloutCache | None = None,  # prompts sampled before (same policy and params) are reused
        label: str | None = None,  # a pool member's name, for the progress lines
        environment=None,  # EnvironmentParams: multi-turn episodes instead of single samples
        reasoning=None,  # ReasoningTags: a leading trace goes to `reasoning`, apart from the answer
    ):
        cache = cache or RolloutCache(None, "", "transformers", sampling)
        super().__init__(cache, total_prompts, label, environment, reasoning)
        self.model_dir = model_dir
        self.sampling = sampling
        self.device = device

    def load_model(self) -> LoadedPolicy:
        import torch

        torch.manual_seed(0)
        with timings.timed("model_load"):
            return load_policy(self.model_dir, self.device)

    def _generate(self, model: LoadedPolicy, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        return generate_samples(
            model, [p["messages"] for p in prompts], [p["prompt_id"] for p in prompts], self.sampling
        )

    def _generate_turns(self, model: LoadedPolicy, requests: list) -> list[Sample]:
        messages, seeds, tools, starts = self._turn_inputs(requests)
        return generate_turns(model, messages, seeds, self.sampling, tools, starts)

    def _chat_tokenizer(self, model: LoadedPolicy):
        return model.tokenizer

    def _token_counter(self, model: LoadedPolicy):
        return token_counter(model.tokenizer)
