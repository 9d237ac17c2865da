"""OpenAI-compatible backend: sample the policy from any chat endpoint (`vllm serve`, SGLang, `transformers serve`,
a hosted model) through the judge's client: as many requests in flight as the server takes, up to
`max_concurrency` (transforms/judges/concurrency.py: a serial CPU server gets one at a time, not a burst that times
out), retries with backoff on 429/5xx/timeouts, token accounting, and the API key read from an environment variable
only.

Every sample is its own request (n=1) with its own seed (`sample_seed(seed, prompt_id, index)`): a sample depends
on its prompt and index only, exact token counts come from each reply's usage, and servers that ignore `n` (as
`transformers serve` does) give the same rows. `logprob_sum` is summed from the reply's token logprobs, or null
where the server sends none. Whether a server honours `seed` is its business: the rollouts cache makes reruns
byte-stable either way. A batch whose requests still fail after the retries raises: the batches before it are in
the cache, and the stage fails (see `max_generation_errors`) so that a rerun resumes instead of losing rows.
"""

import logging
from typing import Any

from rewardmill.transforms.judges.client import JudgeRequest, Sampling
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.endpoint import EndpointPolicy
from rewardmill.transforms.sampling.handler import PolicyHandler
from rewardmill.transforms.sampling.params import Sample, SamplingParams, sample_seed

log = logging.getLogger("rewardmill")


class EndpointError(RuntimeError):
    """Requests to the policy endpoint failed beyond the retry budget."""


def check_reachable(policy: EndpointPolicy, timeout: float = 10.0) -> None:
    """Fail before any work when nothing answers at the endpoint (any HTTP answer counts: some servers have no
    /models). The error names the URL and what to do."""
    import httpx

    url = policy.base_url.rstrip("/") + "/models"
    try:
        httpx.get(url, timeout=timeout)
    except httpx.HTTPError as exc:
        raise EndpointError(
            f"rollouts: the policy endpoint {policy.base_url} is unreachable ({type(exc).__name__}: {exc}); start the "
            "server (e.g. `vllm serve models/policy`) or fix rollouts.openai.base_url"
        ) from exc


def sample_requests(messages: list[dict], prompt_id: str, sp: SamplingParams) -> list[JudgeRequest]:
    """One n=1 request per sample, seeded by (seed, prompt_id, index) (pure)."""
    conversation = tuple({"role": m["role"], "content": m["content"]} for m in messages)
    return [
        JudgeRequest(
            conversation,
            Sampling(
                temperature=sp.temperature,
                top_p=sp.top_p,
                max_tokens=sp.max_new_tokens,
                n=1,
                seed=sample_seed(sp.seed, prompt_id, j),
                top_logprobs=1,  # the chosen tokens' logprobs -> logprob_sum (servers that ignore it send none)
            ),
        )
        for j in range(sp.n)
    ]


class OpenAIPolicyHandler(PolicyHandler):
    """The policy behind an OpenAI-compatible endpoint, through the judge's client."""

    def __init__(
        self,
        endpoint: EndpointPolicy,
        sampling: SamplingParams,
        total_prompts: int | None = None,
        cache: RolloutCache | None = None,
        label: str | None = None,  # a pool member's name, for the progress lines
        reasoning=None,  # ReasoningTags: a leading trace goes to `reasoning`, apart from the answer
    ):
        super().__init__(cache or RolloutCache(None, "", "openai", sampling), total_prompts, label, None, reasoning)
        self.endpoint = endpoint
        self.sampling = sampling

    def load_model(self):
        from rewardmill.transforms.judges.openai_client import OpenAIJudgeClient

        return OpenAIJudgeClient(self.endpoint.client_config())

    def _generate(self, client, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        sp = self.sampling
        requests = [r for p in prompts for r in sample_requests(p["messages"], p["prompt_id"], sp)]
        responses = client.complete(requests)
        owners = [p["prompt_id"] for p in prompts for _ in range(sp.n)]
        failed = [(pid, r.error) for pid, r in zip(owners, responses, strict=True) if r.error is not None]
        if failed:
            raise EndpointError(
                f"{len(failed)} of {len(responses)} requests to {self.endpoint.base_url} failed after retries "
                f"(first: prompt {failed[0][0]}: {failed[0][1]})"
            )
        results, it = [], iter(zip(requests, responses, strict=True))
        for _ in prompts:
            per = []
            for j in range(sp.n):
                request, response = next(it)
                completion = response.completions[0]
                logprobs = completion.logprobs
                per.append(
                    Sample(
                        index=j,
                        seed=request.sampling.seed,
                        completion=completion.text.strip(),
                        n_tokens=response.completion_tokens or (len(logprobs) if logprobs else 0),
                        finish_reason="length" if completion.finish_reason == "length" else "stop",
                        logprob_sum=sum(t.logprob for t in logprobs) if logprobs else None,
                    )
                )
            results.append(per)
        return results
