"""Content-hash cache of judge calls: the same (model, messages, sampling) is sent once, ever.

Key = sha256 of canonical JSON of (client model_id, messages, sampling). Greedy and seeded calls are functions of
their key, so a rerun (or a labeler sharing a prompt with another) reads the stored response instead of paying for
it again; unseeded sampling (temperature > 0, seed None) asks for fresh randomness and is never cached. Responses
with `error` are not cached either: they may be transient. Storage is a `SegmentStore` (atomic JSONL segments,
flushed every `flush_every` new responses and on close()), so a killed stage keeps what it had flushed.
"""

import dataclasses
import hashlib
from pathlib import Path

from rewardmill.transforms.config import canonical_json
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.segments import SegmentStore
from rewardmill.transforms.judges.client import Completion, JudgeClient, JudgeRequest, JudgeResponse, TokenLogprob


def call_key(model_id: str, request: JudgeRequest) -> str:
    payload = {"model_id": model_id, "messages": request.messages, "sampling": request.sampling}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def is_cacheable(request: JudgeRequest) -> bool:
    s = request.sampling
    return s.temperature == 0 or s.seed is not None


def response_to_dict(response: JudgeResponse) -> dict:
    return {
        "completions": [
            {
                "text": c.text,
                "finish_reason": c.finish_reason,
                "logprobs": None if c.logprobs is None else [dataclasses.asdict(t) for t in c.logprobs],
            }
            for c in response.completions
        ],
        "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens,
    }


def response_from_dict(item: dict) -> JudgeResponse:
    completions = tuple(
        Completion(
            text=c["text"],
            finish_reason=c["finish_reason"],
            logprobs=None if c["logprobs"] is None else tuple(TokenLogprob(**t) for t in c["logprobs"]),
        )
        for c in item["completions"]
    )
    return JudgeResponse(completions, item["prompt_tokens"], item["completion_tokens"])


class CachedJudgeClient:
    """A JudgeClient that answers repeated calls from `cache_dir/<model>/` and sends only the rest to `inner`.

    Cached responses come back with `cached=True`. `usage()` is the inner client's plus cache_hits / cache_misses.
    """

    def __init__(self, inner: JudgeClient, cache_dir: str | Path, flush_every: int = 16):
        self.inner = inner
        self.model_id = inner.model_id
        # One folder per model: a worker loads only the calls of the model it judges with.
        self.cache_dir = str(cache_dir)  # local or a FileSystems URL
        directory = storage.join(cache_dir, f"calls-{hashlib.sha256(self.model_id.encode()).hexdigest()[:16]}")
        self._store = SegmentStore(directory, "response", flush_every, response_to_dict, response_from_dict)

    def __repr__(self) -> str:
        return f"CachedJudgeClient({self.inner!r}, cache_dir={self.cache_dir!r})"

    @property
    def directory(self) -> str:
        return self._store.directory

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        responses: list[JudgeResponse | None] = [None] * len(requests)
        to_send: dict[str, list[int]] = {}  # key -> positions asking for it (equal requests are sent once)
        unkeyed: list[int] = []
        for i, request in enumerate(requests):
            if not is_cacheable(request):
                unkeyed.append(i)
                continue
            key = call_key(self.model_id, request)
            if key in to_send:
                to_send[key].append(i)
                continue
            hit = self._store.get(key)
            if hit is not None:
                responses[i] = dataclasses.replace(hit, cached=True)
            else:
                to_send[key] = [i]
        keyed = list(to_send.items())
        sent = [requests[positions[0]] for _, positions in keyed] + [requests[i] for i in unkeyed]
        fresh = self.inner.complete(sent) if sent else []
        for (key, positions), response in zip(keyed, fresh[: len(keyed)], strict=True):
            if response.error is None:
                self._store.put(key, response)
            for i in positions:
                responses[i] = response
        for i, response in zip(unkeyed, fresh[len(keyed) :], strict=True):
            responses[i] = response
        return responses

    def usage(self) -> dict[str, int]:
        return {**self.inner.usage(), "cache_hits": self._store.hits, "cache_misses": self._store.misses}

    def flush(self) -> None:
        self._store.flush()

    def close(self) -> None:
        self._store.flush()
        self.inner.close()
