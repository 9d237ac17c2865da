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

import json
import logging
from typing import Any

from rewardmill.transforms.judges.client import JudgeRequest, Sampling
from rewardmill.transforms.judges.untrusted import has_local_tokenizer, local_specials, neutral_message
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.endpoint import EndpointPolicy
from rewardmill.transforms.sampling.handler import PolicyHandler
from rewardmill.transforms.sampling.params import Sample, SamplingParams, sample_seed
from rewardmill.transforms.sampling.reasoning import served_text

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
    return [JudgeRequest(conversation, one_sample(sp, sample_seed(sp.seed, prompt_id, j))) for j in range(sp.n)]


def one_sample(sp: SamplingParams, seed: int) -> Sampling:
    """One seeded sample of the policy's sampling settings, with the chosen tokens' logprobs (-> logprob_sum;
    servers that ignore the ask send none)."""
    return Sampling(
        temperature=sp.temperature, top_p=sp.top_p, max_tokens=sp.max_new_tokens, n=1, seed=seed, top_logprobs=1
    )


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
        environment=None,  # EnvironmentParams: multi-turn episodes, each turn one request
        calls_dir: str | None = None,  # the call cache a batch pass filled (endpoint.batch): answers are read there
    ):
        super().__init__(
            cache or RolloutCache(None, "", "openai", sampling), total_prompts, label, environment, reasoning
        )
        self.endpoint = endpoint
        self.sampling = sampling
        self.calls_dir = calls_dir
        self._warned = False  # said once that the server's reasoning_content is left out

    def load_model(self):
        from rewardmill.transforms.judges.openai_client import OpenAIJudgeClient

        client = OpenAIJudgeClient(self.endpoint.client_config())
        if self.endpoint.batch is None or self.calls_dir is None:
            return client
        from rewardmill.transforms.judges.call_cache import CachedJudgeClient

        # the batch pass (transforms/batch/samples.py) left its answers here; what it could not get goes online
        return CachedJudgeClient(client, self.calls_dir)

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
                per.append(self._sample_of(j, request.sampling.seed, response))
            results.append(per)
        return results

    def _sample_of(self, index: int, seed: int, response) -> Sample:
        """One reply as a Sample. A trace the server sent apart (`reasoning_content`) joins the text in the tags of
        rollouts.reasoning, which split it off again after the cache; without rollouts.reasoning it is left out, and
        said once."""
        completion = response.completions[0]
        logprobs = completion.logprobs
        finish = "length" if completion.finish_reason == "length" else "stop"
        if completion.reasoning is not None and self.reasoning is None and not self._warned:
            self._warned = True
            log.warning(
                "rollouts: %s sends reasoning_content apart from the answer; set rollouts.reasoning to keep it "
                "(without it, rollouts hold the answer alone)",
                self.endpoint.base_url,
            )
        text = completion.text.strip()
        if self.reasoning is not None:
            text = served_text(completion.text, completion.reasoning, finish, self.reasoning)
        return Sample(
            index=index,
            seed=seed,
            completion=text,
            n_tokens=response.completion_tokens or (len(logprobs) if logprobs else 0),
            finish_reason=finish,
            logprob_sum=sum(t.logprob for t in logprobs) if logprobs else None,
        )

    def _generate_turns(self, client, requests: list) -> list[Sample]:
        """One n=1 request per TurnRequest, seeded by the turn's seed, its conversation in the OpenAI format (tool
        calls with JSON-string arguments). The episode's turns are untrusted: where the endpoint serves a local
        folder, its tokenizer's special strings are broken in them first, as the local backends do. The tools travel
        in the text protocol's system message (docs/environments.md), not as the API's `tools`."""
        specials = local_specials(self.endpoint.model) if has_local_tokenizer(self.endpoint.model) else ()
        sp = self.sampling
        sent = [
            JudgeRequest(
                tuple(api_message(m, specials if i >= r.turns_from else ()) for i, m in enumerate(r.messages)),
                one_sample(sp, r.seed),
            )
            for r in requests
        ]
        responses = client.complete(sent)
        failed = [r.error for r in responses if r.error is not None]
        if failed:
            raise EndpointError(
                f"{len(failed)} of {len(responses)} turn requests to {self.endpoint.base_url} failed after retries "
                f"(first: {failed[0]})"
            )
        return [self._sample_of(0, r.seed, response) for r, response in zip(requests, responses, strict=True)]


def api_message(message: dict[str, Any], specials: tuple[str, ...]) -> dict[str, Any]:
    """A conversation message as the chat API takes it: role and content (never null: "" for a turn of tool calls
    only), tool calls with their arguments as a JSON string, a tool result's id and name; `specials` broken in every
    string it holds (untrusted.neutral_message, as the local backends do)."""
    message = neutral_message(message, specials) if specials else message
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": str(call["function"].get("name")),
                    "arguments": _arguments(call["function"].get("arguments")),
                },
            }
            for call in calls
        ]
    for key in ("tool_call_id", "name"):
        if message.get(key):
            out[key] = message[key]
    return out


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True, ensure_ascii=False)
