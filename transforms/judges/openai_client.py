"""Judge client for any OpenAI-compatible chat endpoint: a hosted API, `vllm serve`, `transformers serve`.

Requests go out as many at a time as the server takes (concurrency.py: an AdaptiveLimit starts at 1, halves on 429,
5xx, timeouts and refused connections, grows while latency stays flat and shrinks when it grows with concurrency),
never more than `config.max_concurrency`; `adaptive_concurrency: false` pins it at `max_concurrency`. A request waits
for a slot before it goes on the wire, so its `request_timeout` (per attempt) only runs while the server has it, and
each retry waits for a slot again. Only transient failures are retried (429, 5xx, timeouts,
connection errors), with exponential backoff and jitter (tenacity; the openai client's own retries are off so the
budget is counted in one place). A request that still fails comes back as a JudgeResponse with `error`; a 4xx other
than 429 is a bug in the request and is not retried. The API key is read from the environment variable named by
`config.api_key_env` when the client is created, on each worker; it is never stored in the pickled object, never
logged and never put in an error.
"""

import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from rewardmill.transforms.judges.client import (
    BackendConfig,
    Completion,
    JudgeRequest,
    JudgeResponse,
    Sampling,
    TokenLogprob,
)
from rewardmill.transforms.judges.concurrency import AdaptiveLimit

log = logging.getLogger("rewardmill")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")
LOCAL_PLACEHOLDER_KEY = "EMPTY"  # local servers (vLLM, transformers serve) accept any key
# Key-like tokens an endpoint may echo back in an error ("Incorrect API key provided: sk-ab***yz").
KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_*.-]{4,}")


def is_local(base_url: str) -> bool:
    return urlparse(base_url).hostname in LOCAL_HOSTS


def resolve_api_key(config: BackendConfig) -> str:
    """The key from the environment variable `config.api_key_env`; a placeholder for a localhost endpoint."""
    key = os.environ.get(config.api_key_env)
    if key:
        return key
    if is_local(config.base_url or DEFAULT_BASE_URL):
        return LOCAL_PLACEHOLDER_KEY
    raise ValueError(
        f"judge backend {config.base_url or DEFAULT_BASE_URL}: environment variable {config.api_key_env} is not "
        "set (backend.api_key_env names the variable that holds the API key)"
    )


def is_retryable(exc: BaseException) -> bool:
    """429, 5xx, timeouts and connection errors may pass; any other 4xx will fail the same way again."""
    import openai

    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def retry_after_seconds(exc: BaseException | None) -> float:
    """The server's Retry-After (seconds form) on a 429/503, else 0."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else 0.0
    except ValueError:
        return 0.0  # the HTTP-date form: fall back to our own backoff


class OpenAIJudgeClient:
    """JudgeClient for an OpenAI-compatible endpoint. `backoff` is the first retry's wait in seconds (doubling
    each retry, plus up to `backoff` of jitter, at most `max_backoff`); tests shrink it."""

    def __init__(self, config: BackendConfig, backoff: float = 1.0, max_backoff: float = 30.0):
        self.config = config
        self.base_url = config.base_url or DEFAULT_BASE_URL
        self.model_id = endpoint_model_id(config)
        self.backoff = backoff
        self.max_backoff = max_backoff
        resolve_api_key(config)  # fail now, before any work, when the key is missing
        self._client = None
        self._lock = threading.Lock()
        self._usage = self._zero_usage()
        self._limit = self._new_limit()

    def _new_limit(self) -> AdaptiveLimit:
        config = self.config
        # half the per-attempt timeout: a request the server queues must still finish well inside its timeout
        cap = config.request_timeout / 2 if config.request_timeout else None
        return AdaptiveLimit(max(1, config.max_concurrency), adaptive=config.adaptive_concurrency, latency_cap=cap)

    @staticmethod
    def _zero_usage() -> dict[str, int]:
        return {"requests": 0, "retries": 0, "failures": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def __getstate__(self):  # settings only: no client (it holds the key), no lock, no learned limit
        return {**self.__dict__, "_client": None, "_lock": None, "_usage": self._zero_usage(), "_limit": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._limit = self._new_limit()  # each worker finds what its server takes

    def __repr__(self) -> str:
        return (
            f"OpenAIJudgeClient(base_url={self.base_url!r}, model={self.config.model!r}, "
            f"api_key_env={self.config.api_key_env!r})"
        )

    def usage(self) -> dict[str, int]:
        """Calls, retries, failures and tokens so far, and the concurrency limit: now (the final one once the work is
        done), its peak, and how often it was lowered."""
        with self._lock:
            return {**self._usage, **self._limit.stats()}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _count(self, **amounts: int) -> None:
        with self._lock:
            for name, amount in amounts.items():
                self._usage[name] += amount

    def _openai(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                api_key=resolve_api_key(self.config),
                base_url=self.base_url,
                timeout=self.config.request_timeout,  # per attempt
                max_retries=0,  # tenacity retries, so each attempt is counted and bounded here
            )
        return self._client

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        if not requests:
            return []
        self._openai()  # create the client once, before the threads share it
        workers = max(1, min(self.config.max_concurrency, len(requests)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            return list(pool.map(self._complete_one, requests))

    def _complete_one(self, request: JudgeRequest) -> JudgeResponse:
        s = request.sampling
        prompt_tokens = completion_tokens = 0  # every successful call's tokens count, even if a later one fails
        try:
            completions, prompt_tokens, completion_tokens = self._send(request, s.n, s.seed)
            # Some endpoints ignore `n` (transformers serve does): ask again for the rest, one seed further each
            # time; greedy samples are all equal, so they are just repeated.
            for extra in range(1, s.n):
                if len(completions) >= s.n:
                    break
                if s.temperature == 0:
                    completions = (completions * s.n)[: s.n]
                    break
                seed = None if s.seed is None else s.seed + extra
                more, more_prompt, more_completion = self._send(request, s.n - len(completions), seed)
                completions += more
                prompt_tokens += more_prompt
                completion_tokens += more_completion
        except Exception as exc:  # never raise for one request: the labeler records the error and moves on
            self._count(requests=1, failures=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
            message = self._redact(f"{type(exc).__name__}: {_short(exc)}")
            log.warning("judge %s: request failed: %s", self.model_id, message)
            return JudgeResponse(completions=(), error=message)
        self._count(requests=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return JudgeResponse(tuple(completions), prompt_tokens, completion_tokens)

    def _send(self, request: JudgeRequest, n: int, seed: int | None) -> tuple[list[Completion], int, int]:
        kwargs = chat_body(self.config.model, request, n, seed)

        def before_sleep(state) -> None:
            self._count(retries=1)
            exc = state.outcome.exception()
            log.info(
                "judge %s: attempt %d failed (%s), retrying",
                self.model_id,
                state.attempt_number,
                self._redact(f"{type(exc).__name__}: {_short(exc)}"),
            )

        retry = retrying(self.config, self.backoff, self.max_backoff, before_sleep)
        response = retry(self._attempt, **kwargs)
        completions = [_completion(choice) for choice in sorted(response.choices, key=lambda c: c.index)]
        usage = response.usage
        return completions, (usage.prompt_tokens or 0) if usage else 0, (usage.completion_tokens or 0) if usage else 0

    def _attempt(self, **kwargs):
        """One request on the wire, in a slot of the adaptive limit; its answer (or failure) moves the limit."""
        ticket = self._limit.acquire()  # waiting here costs no timeout: the clock starts on the wire
        start = time.monotonic()
        try:
            response = self._openai().chat.completions.create(**kwargs)
        except BaseException as exc:  # whatever ends the attempt gives its slot back
            (self._limit.overloaded if is_retryable(exc) else self._limit.released)(ticket)
            raise
        self._limit.succeeded(ticket, time.monotonic() - start)
        return response

    def _redact(self, text: str) -> str:
        return redact(text, self.config.api_key_env)


def endpoint_model_id(config: BackendConfig) -> str:
    """What identifies an endpoint's model in cache keys: base_url|model[|fingerprint]."""
    base_url = config.base_url or DEFAULT_BASE_URL
    return f"{base_url}|{config.model}" + (f"|{config.fingerprint}" if config.fingerprint else "")


def chat_body(model: str, request: JudgeRequest, n: int | None = None, seed: int | None = None) -> dict:
    """The chat completions body of `request` (n and seed: the request's own unless given); the batch client sends
    the same body in a batch file."""
    s = request.sampling
    n = s.n if n is None else n
    seed = s.seed if seed is None else seed
    body = {
        "model": model,
        "messages": [dict(m) for m in request.messages],
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_tokens": s.max_tokens,
    }
    if n > 1:
        body["n"] = n
    if seed is not None:
        body["seed"] = seed
    if s.top_logprobs > 0:
        body.update(logprobs=True, top_logprobs=s.top_logprobs)
    return body


def response_of(body: dict, sampling: Sampling) -> JudgeResponse:
    """A chat completion's JSON body (a batch result) -> JudgeResponse, read as an online answer is; greedy samples
    an endpoint gave fewer of than `n` are repeated, as the online client does."""
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(body)
    completions = [_completion(choice) for choice in sorted(completion.choices, key=lambda c: c.index)]
    if sampling.temperature == 0 and 0 < len(completions) < sampling.n:
        completions = (completions * sampling.n)[: sampling.n]
    usage = completion.usage
    prompt = (usage.prompt_tokens or 0) if usage else 0
    return JudgeResponse(tuple(completions), prompt, (usage.completion_tokens or 0) if usage else 0)


def retrying(config: BackendConfig, backoff: float, max_backoff: float, before_sleep):
    """A tenacity `Retrying` for one endpoint call: only transient failures (`is_retryable`), at most
    `config.max_retries` retries, exponential backoff with jitter starting at `backoff` seconds (capped at
    `max_backoff`), or longer when the server's Retry-After asks for it (capped at `config.max_retry_after`)."""
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

    exponential = wait_exponential_jitter(multiplier=backoff, max=max_backoff, jitter=backoff)

    def wait(state) -> float:  # our backoff, or longer when the server says when to come back (up to its cap)
        asked = min(retry_after_seconds(state.outcome.exception()), config.max_retry_after)
        return max(min(exponential(state), max_backoff), asked)

    return Retrying(
        stop=stop_after_attempt(config.max_retries + 1),
        wait=wait,
        retry=retry_if_exception(is_retryable),
        before_sleep=before_sleep,
        reraise=True,
    )


def redact(text: str, api_key_env: str) -> str:
    """`text` with the key in `api_key_env`, and anything shaped like a key, replaced by ***."""
    key = os.environ.get(api_key_env)
    if key:
        text = text.replace(key, "***")
    return KEY_PATTERN.sub("***", text)


def _completion(choice) -> Completion:
    finish = {"length": "length", "content_filter": "error"}.get(choice.finish_reason, "stop")
    content = choice.logprobs.content if choice.logprobs is not None else None
    logprobs = None
    if content:  # endpoints that ignore `logprobs` send none: None, not an empty tuple
        logprobs = tuple(TokenLogprob(token.token, token.logprob, _top(token.top_logprobs or [])) for token in content)
    return Completion(
        text=choice.message.content or "", finish_reason=finish, logprobs=logprobs, reasoning=served_reasoning(choice)
    )


def served_reasoning(choice) -> str | None:
    """The reasoning trace a server sends apart from the content: vLLM's and SGLang's reasoning parsers put it in
    `reasoning_content` (newer vLLM also in `reasoning`); None when there is none."""
    for key in ("reasoning_content", "reasoning"):  # the SDK keeps a server's extra fields as attributes
        value = getattr(choice.message, key, None)
        if isinstance(value, str) and value:
            return value
    return None


def _top(alternatives) -> dict[str, float]:
    top: dict[str, float] = {}
    for alt in sorted(alternatives, key=lambda a: a.logprob, reverse=True):
        top.setdefault(alt.token, alt.logprob)
    return top


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]
