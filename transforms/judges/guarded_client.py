"""A JudgeClient wrapper that neutralizes special-token strings in every message before anything tokenizes them.

It sits outside the call cache (backends.make_client builds guard(cache(client))), so a call is keyed by what is
really sent: a request without markers keys as before, one with markers never reuses a judgment made on the raw
text. Local backends (transformers, vLLM) break the judge tokenizer's own special strings and the generic marker
shapes; so does an endpoint whose `model` names a local folder with a tokenizer (the folder it serves); any other
endpoint, whose tokenizer is not here, gets the generic shapes (untrusted.GENERIC_MARKERS).
"""

from dataclasses import replace

from rewardmill.transforms.judges.call_cache import CachedJudgeClient
from rewardmill.transforms.judges.client import BackendConfig, JudgeClient, JudgeRequest, JudgeResponse
from rewardmill.transforms.judges.untrusted import has_local_tokenizer, local_specials, neutralize


def guard_request(request: JudgeRequest, specials: tuple[str, ...] = ()) -> JudgeRequest:
    """Pure: `request` with every message's text neutralized (the same object when nothing needed breaking)."""
    messages = tuple(
        {**m, "content": neutralize(m["content"], specials)} if isinstance(m.get("content"), str) else m
        for m in request.messages
    )
    return request if messages == request.messages else replace(request, messages=messages)


class GuardedJudgeClient:
    """JudgeClient: `inner` with every request neutralized first. Its tokenizer's specials load on first use."""

    def __init__(self, inner: JudgeClient, config: BackendConfig):
        self.inner = inner
        self.config = config
        self.model_id = inner.model_id

    def __repr__(self) -> str:
        return f"GuardedJudgeClient({self.inner!r})"

    def specials(self) -> tuple[str, ...]:
        if self.config.kind in ("transformers", "vllm") or has_local_tokenizer(self.config.model):
            return local_specials(self.config.model)
        return ()

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        if not requests:
            return []
        specials = self.specials()
        return self.inner.complete([guard_request(r, specials) for r in requests])

    def usage(self) -> dict[str, int]:
        return self.inner.usage()

    def flush(self) -> None:
        """Write the call cache's pending responses now (a stage's unit of resume); nothing without a cache."""
        if isinstance(self.inner, CachedJudgeClient):
            self.inner.flush()

    def close(self) -> None:
        self.inner.close()


def unguarded(client: JudgeClient) -> JudgeClient:
    """The client without its guard: only for measuring what the defenses change (bench/judge_probes.py)."""
    return client.inner if isinstance(client, GuardedJudgeClient) else client
