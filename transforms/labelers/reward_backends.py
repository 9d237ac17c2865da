"""Where a reward model runs: transformers in this process, vLLM's pooling runner in this process, or a server that
answers vLLM's `/classify` (`vllm serve <reward model> --runner pooling`).

Each backend does one thing: token ids in, each head's raw logit out, in input order. The scorer
(`reward_model.RewardModelScorer`) owns the chat template, the tokenization, the length limit and the labels, so
the three backends label the same inputs the same way and differ only in where the forward pass runs. Inputs go
as token ids everywhere: a server that tokenized text itself could add a second BOS (see `sampling/vllm_engine`).
"""

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from rewardmill.transforms.judges.client import BackendConfig
from rewardmill.transforms.judges.openai_client import redact, resolve_api_key, retrying

log = logging.getLogger("rewardmill")

BACKENDS = ("transformers", "vllm", "endpoint")


class RewardBackend(Protocol):
    def logits(self, token_ids: list[list[int]]) -> list[list[float]]:
        """Each input's head logits, in input order (one list per input, one float per head)."""
        ...


def batches_by_length(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first), so a batch pads little (pure)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class TransformersRewardBackend:
    """AutoModelForSequenceClassification in this process: length-sorted, right-padded batches of `batch_size`."""

    def __init__(self, model: str, dtype: str, batch_size: int, threads: int, pad_token_id: int):
        import torch
        from transformers import AutoModelForSequenceClassification

        if threads:
            torch.set_num_threads(threads)
        network = AutoModelForSequenceClassification.from_pretrained(model, dtype=getattr(torch, dtype))
        if network.config.pad_token_id is None:  # a batch needs the pad id to find each sequence's last token
            network.config.pad_token_id = pad_token_id
        self.model = network.eval()
        self.batch_size = batch_size

    def logits(self, token_ids: list[list[int]]) -> list[list[float]]:
        import torch

        out: list[list[float]] = [[] for _ in token_ids]
        pad = self.model.config.pad_token_id
        for batch in batches_by_length([len(ids) for ids in token_ids], self.batch_size):
            width = max(len(token_ids[i]) for i in batch)
            ids = torch.tensor([token_ids[i] + [pad] * (width - len(token_ids[i])) for i in batch])
            mask = torch.tensor([[1] * len(token_ids[i]) + [0] * (width - len(token_ids[i])) for i in batch])
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask).logits.float()
            for i, row in zip(batch, logits.tolist(), strict=True):
                out[i] = row
        return out


class VLLMRewardBackend:
    """vLLM's pooling runner (`LLM(runner="pooling").classify`, activation off, so the heads' logits come back as
    they are). The engine is the process's shared one for this model and settings (`sampling/vllm_engine`); vLLM
    schedules the batches itself. On CPU the engine runs float32 and eager, as the transformers backend does."""

    def __init__(self, model: str, llm_kwargs: dict, max_length: int):
        from rewardmill.transforms.sampling.vllm_engine import engine

        self.llm = engine(model, {"runner": "pooling", "max_model_len": max_length, **llm_kwargs})

    def logits(self, token_ids: list[list[int]]) -> list[list[float]]:
        from vllm.pooling_params import PoolingParams

        if not token_ids:
            return []
        outputs = self.llm.classify(
            [{"prompt_token_ids": ids} for ids in token_ids],
            pooling_params=PoolingParams(use_activation=False),
            use_tqdm=False,
        )
        return [[float(x) for x in output.outputs.probs] for output in outputs]


class EndpointError(RuntimeError):
    """The reward endpoint failed after its retries, or answered something other than one row of logits per input."""


class EndpointRewardBackend:
    """A server that answers vLLM's `POST /classify` ({"model", "input": [token ids...], "use_activation": false} ->
    {"data": [{"index", "probs"}]}): `vllm serve <reward model> --runner pooling`. `batch_size` inputs per request,
    `max_concurrency` requests at once; 429, 5xx, timeouts and connection errors are retried with backoff and the
    server's Retry-After (the judge client's `retrying`), anything else fails the batch at once. The key comes from
    `api_key_env` (localhost needs none) and never reaches a log or an error."""

    def __init__(self, endpoint: BackendConfig, batch_size: int, backoff: float = 1.0):
        self.endpoint = endpoint
        self.batch_size = batch_size
        self.backoff = backoff
        resolve_api_key(endpoint)  # fail now when the key is missing
        self._client = None
        self._lock = threading.Lock()

    def _openai(self):
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    api_key=resolve_api_key(self.endpoint),
                    base_url=self.endpoint.base_url.rstrip("/"),
                    timeout=self.endpoint.request_timeout,
                    max_retries=0,  # tenacity retries, counted and bounded here
                )
            return self._client

    def _before_sleep(self, state) -> None:
        log.info(
            "reward endpoint %s: attempt %d failed (%s), retrying",
            self.endpoint.base_url,
            state.attempt_number,
            type(state.outcome.exception()).__name__,
        )

    def logits(self, token_ids: list[list[int]]) -> list[list[float]]:
        if not token_ids:
            return []
        chunks = [token_ids[i : i + self.batch_size] for i in range(0, len(token_ids), self.batch_size)]
        workers = max(1, min(self.endpoint.max_concurrency, len(chunks)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reward") as pool:
            return [row for rows in pool.map(self._classify, chunks) for row in rows]

    def _classify(self, chunk: list[list[int]]) -> list[list[float]]:
        body = {"model": self.endpoint.model, "input": chunk, "use_activation": False}
        url = self.endpoint.base_url
        try:
            retry = retrying(self.endpoint, self.backoff, 30.0, self._before_sleep)
            # dict[str, Any], not a bare dict: openai 2.x's response typing needs the key and value types
            answer = retry(self._openai().post, "/classify", cast_to=dict[str, Any], body=body)
        except Exception as exc:
            raise EndpointError(
                f"reward endpoint {url}/classify failed for {len(chunk)} inputs: {type(exc).__name__}: "
                f"{redact(str(exc), self.endpoint.api_key_env)[:300]}. Check that it serves the reward model with "
                "`vllm serve <model> --runner pooling` and that endpoint.model names it"
            ) from exc
        data = sorted(answer.get("data") or [], key=lambda d: d["index"])
        if [d["index"] for d in data] != list(range(len(chunk))):
            raise EndpointError(f"reward endpoint {url}/classify answered {len(data)} rows for {len(chunk)} inputs")
        return [[float(x) for x in d["probs"]] for d in data]


def make_backend(config, pad_token_id: int) -> RewardBackend:
    """The backend a RewardModelConfig names."""
    if config.backend == "transformers":
        return TransformersRewardBackend(config.model, config.dtype, config.batch_size, config.threads, pad_token_id)
    if config.backend == "vllm":
        return VLLMRewardBackend(config.model, {"dtype": config.dtype, **config.vllm}, config.max_length)
    return EndpointRewardBackend(config.endpoint_config(), config.batch_size)
