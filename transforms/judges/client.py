"""One client interface for every judge backend: a local transformers model or any OpenAI-compatible endpoint.

Judges are three separable pieces (STYLE.md): a pure prompt builder, a pure parser, and a client that only sends
requests. This module holds the plain values they exchange and the client protocol; backends live in
`transformers_client.py` and `openai_client.py`, the content-hash call cache in `call_cache.py`.
"""

from dataclasses import dataclass, field
from typing import Literal, Protocol


@dataclass(frozen=True)
class Sampling:
    """How to sample a judgment. temperature 0 = greedy (reproducible); otherwise `seed` makes it reproducible."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    n: int = 1  # samples per request (self-consistency); greedy requests should keep 1
    seed: int | None = 0
    # top alternatives per generated token (0 = none). Backends that cannot return them give logprobs=None.
    top_logprobs: int = 0


@dataclass(frozen=True)
class JudgeRequest:
    """A chat request: messages are {role, content} dicts (TRL conversational form)."""

    messages: tuple[dict, ...]
    sampling: Sampling = field(default_factory=Sampling)


@dataclass(frozen=True)
class TokenLogprob:
    """One generated position: the chosen token, its logprob, and the top alternatives (token -> logprob)."""

    token: str
    logprob: float
    top: dict[str, float]


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # stop | length | error
    logprobs: tuple[TokenLogprob, ...] | None = None  # None when not asked for or the backend cannot give them
    # a served model's reasoning trace sent apart from `text` (`reasoning_content`); None when the server sends none
    reasoning: str | None = None


@dataclass(frozen=True)
class JudgeResponse:
    """What a client returns for one request. `error` is set (and `completions` empty) when the request failed
    beyond the retry budget: clients never raise for one request, the labeler records it and moves on."""

    completions: tuple[Completion, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    cached: bool = False

    @property
    def text(self) -> str | None:
        return self.completions[0].text if self.completions else None


@dataclass(frozen=True)
class BatchConfig:
    """A backend's `batch:` block: send the label stage's calls through the provider's batch API (transforms/batch/).

    The label stage collects the calls its labeler would send (the way `rewardmill plan` does), sends them as one
    batch per round, and stores every answer in the judges' call cache; the stage then runs as usual and finds them
    there. A call that depends on an earlier answer (an appeal, a second turn) is collected in the next round, up to
    `max_rounds`; whatever is left after that goes online."""

    # the batch API format and lifecycle: openai, or one another package installs (transforms/batch/provider.py)
    provider: str = "openai"
    completion_window: str = "24h"  # how long the provider may take; a batch past it expires (its rest resubmitted)
    poll_seconds: float = 5.0  # the first wait between status checks; it doubles up to max_poll_seconds
    max_poll_seconds: float = 60.0
    # how long one run waits for its batches; past it the stage stops and says so, and a rerun polls the same
    # batches again (nothing is resubmitted, nothing goes online)
    max_wait_seconds: float = 86400.0
    max_resubmits: int = 2  # a failed or expired request is sent again in a new batch at most this many times
    max_requests: int = 50000  # requests per batch file (the OpenAI Batch API's limit); more make several batches
    max_rounds: int = 3  # collect-and-send rounds (a call needing an earlier answer waits for the next round)
    discount: float = 0.5  # the batch price as a share of the online price (money reports)

    def __post_init__(self):
        if not self.provider:
            raise ValueError("batch.provider must name a provider (openai, or an installed one)")
        if not 0 < self.poll_seconds <= self.max_poll_seconds:
            raise ValueError(
                f"batch.poll_seconds must be in (0, max_poll_seconds], got {self.poll_seconds} and "
                f"{self.max_poll_seconds}"
            )
        if self.max_wait_seconds <= 0:
            raise ValueError(f"batch.max_wait_seconds must be > 0, got {self.max_wait_seconds}")
        if self.max_resubmits < 0 or self.max_requests < 1 or self.max_rounds < 1:
            raise ValueError("batch.max_resubmits must be >= 0, max_requests and max_rounds >= 1")
        if not 0 < self.discount <= 1:
            raise ValueError(f"batch.discount must be in (0, 1], got {self.discount}")


@dataclass(frozen=True)
class BackendConfig:
    """Which model judges, and how to reach it (the `backend:` block of a judge's params config)."""

    kind: Literal["transformers", "vllm", "openai"] = "transformers"
    # transformers / vllm: a local HF folder (default: the materialized policy) or a hub id (needs network).
    # openai: the model name the endpoint serves.
    model: str = "models/policy"
    base_url: str | None = None  # openai: e.g. http://localhost:8000/v1 (vLLM serve, transformers serve, a hosted API)
    api_key_env: str = "OPENAI_API_KEY"  # name of the environment variable holding the key; never the key itself
    # openai: what identifies the served weights (e.g. a revision or digest). It joins `base_url|model` in the label
    # and call cache keys, so a model swapped behind the same URL is not served the old model's labels.
    fingerprint: str | None = None
    # openai: the most requests in flight at once. The client finds what the server takes below it (starting at 1;
    # concurrency.py), so a serial CPU server gets one at a time and a hosted API ramps up to it.
    max_concurrency: int = 4
    adaptive_concurrency: bool = True  # openai: false = always max_concurrency in flight (a server known to take it)
    max_retries: int = 4  # openai: retries on 429 / 5xx / timeouts / connection errors only, exponential backoff
    request_timeout: float = 60.0  # openai: seconds per attempt
    # openai: the longest wait a server's Retry-After gets (our own backoff stops at 30 s; a rate-limited hosted API
    # may ask for minutes, and retrying sooner only burns the retry budget)
    max_retry_after: float = 300.0
    batch_size: int = 8  # transformers: requests per generate call
    # transformers: each request in its own generate call, so a judgment's floats (logprob scores) are a function of
    # the request alone, not of its batch mates' padding (docs/targets.md); slower on CPU
    batch_invariant: bool = False
    dtype: str = "float32"  # transformers, vllm: float32 keeps CPU judgments bit-reproducible
    # vllm: extra vllm.LLM(...) kwargs, e.g. {gpu_memory_utilization: 0.4}; left out of the hash (clients are keyed
    # by config), still compared
    vllm: dict = field(default_factory=dict, hash=False)
    cache_dir: str | None = None  # call cache folder; the label stage sets it next to the label cache
    # openai: send the label stage's calls through the provider's batch API first (BatchConfig above, docs/batch.md);
    # the answers land in the call cache, so labels are the online backend's, at the batch price
    batch: BatchConfig | None = None

    def __post_init__(self):
        if self.batch is not None and self.kind != "openai":
            raise ValueError(f"backend.batch needs kind openai (a provider's batch API), got kind {self.kind!r}")
        if self.batch_invariant and self.kind != "transformers":
            raise ValueError(f"backend.batch_invariant is built for kind transformers, got kind {self.kind!r}")


class JudgeClient(Protocol):
    """Sends requests, nothing else. `model_id` identifies the model in cache keys (a content fingerprint for local
    folders, "<base_url>|<model>" for endpoints). `complete` keeps the order of `requests` and never raises for a
    single failed request (it returns a JudgeResponse with `error`). `usage` totals tokens and calls for metrics."""

    model_id: str

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]: ...

    def usage(self) -> dict[str, int]: ...

    def close(self) -> None: ...
