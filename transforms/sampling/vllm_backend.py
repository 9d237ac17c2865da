"""vLLM backend: offline `vllm.LLM` (GPU build, or the CPU build) with one seeded request of n samples per prompt.

Each request carries its own seed (derived from the run seed and prompt_id), so a prompt's samples do not depend on
what else is in the batch; the n samples of a request share that seed and differ by index. Prompts go in as token
ids tokenized as the transformers backend does (see `vllm_engine`). `logprobs=0` makes vLLM return the sampled
token's raw logprob, from which `cumulative_logprob` is summed.
"""

import logging
from collections.abc import Sequence
from typing import Any

from rewardmill.transforms.io import timings
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.handler import PolicyHandler
from rewardmill.transforms.sampling.params import Sample, SamplingParams, prompt_seed
from rewardmill.transforms.sampling.transformers_generate import chat_texts, token_counter, turn_texts
from rewardmill.transforms.sampling.vllm_engine import engine, token_prompts

log = logging.getLogger("rewardmill")


def vllm_sampling_kwargs(sp: SamplingParams, pid: str) -> dict[str, Any]:
    """Our SamplingParams -> keyword arguments of `vllm.SamplingParams` for one prompt's n samples (pure)."""
    return turn_sampling_kwargs(sp, prompt_seed(sp.seed, pid)) | {"n": sp.n}


def turn_sampling_kwargs(sp: SamplingParams, seed: int) -> dict[str, Any]:
    """Keyword arguments of `vllm.SamplingParams` for one sample drawn with `seed` (pure): an episode's turn."""
    return {
        "n": 1,
        "temperature": sp.temperature,
        "top_p": sp.top_p,
        "top_k": sp.top_k if sp.top_k > 0 else 0,  # 0 disables top-k in vLLM >= 0.10
        "max_tokens": sp.max_new_tokens,
        "seed": seed,
        "logprobs": 0,  # the sampled token's logprob only -> cumulative_logprob
    }


def to_samples(request_output, seed: int, keep_tokens: bool = False) -> list[Sample]:
    """vllm.RequestOutput -> Samples in index order; with keep_tokens, each with the prompt's token ids, its own and
    their raw logprobs (`logprobs=0` returns the sampled token's)."""
    samples = []
    for out in sorted(request_output.outputs, key=lambda o: o.index):
        tokens = None
        if keep_tokens:
            ids = list(out.token_ids)
            logprobs = [position[token].logprob for position, token in zip(out.logprobs or [], ids, strict=True)]
            tokens = {"prompt_ids": list(request_output.prompt_token_ids), "completion_ids": ids, "logprobs": logprobs}
        samples.append(
            Sample(
                index=out.index,
                seed=seed,
                completion=out.text.strip(),
                n_tokens=len(out.token_ids),
                finish_reason="length" if out.finish_reason == "length" else "stop",
                logprob_sum=out.cumulative_logprob,
                tokens=tokens,
            )
        )
    return samples


def generate_vllm(llm, conversations: Sequence[list[dict]], prompt_ids: Sequence[str], sp: SamplingParams):
    """n samples for each conversation in one `LLM.generate` call (vLLM schedules the batch itself)."""
    from vllm import SamplingParams as VLLMSamplingParams

    tokenizer = llm.get_tokenizer()
    prompts = token_prompts(tokenizer, chat_texts(tokenizer, conversations))
    params = [VLLMSamplingParams(**vllm_sampling_kwargs(sp, pid)) for pid in prompt_ids]
    outputs = llm.generate(prompts, params, use_tqdm=False)
    return [to_samples(out, p.seed, sp.keep_tokens) for out, p in zip(outputs, params, strict=True)]


def generate_vllm_turns(
    llm,
    conversations: Sequence[list[dict]],
    seeds: Sequence[int],
    sp: SamplingParams,
    tools: list[dict] | None,
    turns_from: Sequence[int] | None = None,
) -> list[Sample]:
    """One assistant turn for each conversation (an episode's next turn), drawn with seeds[i], in one `LLM.generate`
    call; formatted as the transformers backend formats it (`turn_texts`)."""
    from vllm import SamplingParams as VLLMSamplingParams

    tokenizer = llm.get_tokenizer()
    prompts = token_prompts(tokenizer, turn_texts(tokenizer, conversations, tools, turns_from))
    params = [VLLMSamplingParams(**turn_sampling_kwargs(sp, seed)) for seed in seeds]
    outputs = llm.generate(prompts, params, use_tqdm=False)
    return [to_samples(out, seed, sp.keep_tokens)[0] for out, seed in zip(outputs, seeds, strict=True)]


class VLLMPolicyHandler(PolicyHandler):
    """The policy on the process's vLLM engine (`vllm_engine.engine`)."""

    def __init__(
        self,
        model_dir: str,
        sampling: SamplingParams,
        llm_kwargs: dict,
        total_prompts: int | None = None,
        cache: RolloutCache | None = None,  # prompts sampled before (same policy and params) are reused
        label: str | None = None,  # a pool member's name, for the progress lines
        environment=None,  # EnvironmentParams: multi-turn episodes instead of single samples
        reasoning=None,  # ReasoningTags: a leading trace goes to `reasoning`, apart from the answer
    ):
        cache = cache or RolloutCache(None, "", "vllm", sampling)
        super().__init__(cache, total_prompts, label, environment, reasoning)
        self.model_dir = model_dir
        self.sampling = sampling
        self.llm_kwargs = dict(llm_kwargs)

    def load_model(self):
        with timings.timed("model_load"):
            return engine(self.model_dir, self.llm_kwargs)

    def _generate(self, model, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        return generate_vllm(model, [p["messages"] for p in prompts], [p["prompt_id"] for p in prompts], self.sampling)

    def _generate_turns(self, model, requests: list) -> list[Sample]:
        messages, seeds, tools, starts = self._turn_inputs(requests)
        return generate_vllm_turns(model, messages, seeds, self.sampling, tools, starts)

    def _chat_tokenizer(self, model):
        return model.get_tokenizer()

    def _token_counter(self, model):
        return token_counter(model.get_tokenizer())
