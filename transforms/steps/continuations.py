"""Continuations from step prefixes: k policy samples that go on from the end of one step of a rollout.

A step's Monte Carlo value (Math-Shepherd) needs the policy to finish the solution from the prefix through that
step, k times. The prompt is the rollout's chat prompt followed by the prefix text (the assistant turn already
begun), so the policy continues its own answer. Each request is seeded by (seed, request key, sample index): a
continuation depends on its prefix only, never on its batch mates, which the continuation cache relies on.

Backends: `TransformersContinuer` (CPU/GPU, the default) and `VLLMContinuer` (vLLM's GPU or CPU build,
`vllm.LLM.generate` with one seeded request of n samples per prefix). Both pickle as settings and load the model
on first use.
"""

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from rewardmill.transforms.io import storage
from rewardmill.transforms.io.segments import SegmentStore
from rewardmill.transforms.sampling.params import SamplingParams, prompt_seed


@dataclass(frozen=True)
class ContinuationSampling:
    """How continuations are sampled (params `steps.NAME.continuation`)."""

    temperature: float = 0.8  # the policy's own sampling: MC estimates what the policy can still reach
    top_p: float = 0.95
    top_k: int = 0  # 0 = off
    max_new_tokens: int = 64  # the rest of a solution; cut continuations usually miss the answer
    seed: int = 0
    batch_size: int = 8  # prefixes per generate call (each gives k sequences)
    batch_invariant: bool = False  # one generate call per prefix (transformers): floats independent of batch mates

    def __post_init__(self):
        SamplingParams(1, self.temperature, self.top_p, self.top_k, self.max_new_tokens, self.seed)  # validates
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size!r}")

    def sampling(self, k: int) -> SamplingParams:
        return SamplingParams(
            k, self.temperature, self.top_p, self.top_k, self.max_new_tokens, self.seed,
            batch_invariant=self.batch_invariant,
        )  # fmt: skip


@dataclass(frozen=True)
class PrefixRequest:
    """key: what seeds the samples (e.g. "<rollout_id>:<step>"); messages: the rollout's prompt; prefix: the
    completion's text through the step."""

    key: str
    messages: tuple[dict, ...]
    prefix: str


def prompt_text(tokenizer, request: PrefixRequest) -> str:
    """The chat prompt with the generation prompt, then the prefix: the assistant's turn, already begun."""
    chat = tokenizer.apply_chat_template(list(request.messages), add_generation_prompt=True, tokenize=False)
    return chat + request.prefix


class TransformersContinuer:
    """k continuations per prefix on a local transformers model, in batches of `sampling.batch_size` prefixes."""

    backend = "transformers"

    def __init__(self, model_dir: str, sampling: ContinuationSampling, k: int, device: str = "cpu"):
        self.model_dir, self.sampling, self.k, self.device = model_dir, sampling, k, device
        self._policy = None

    def __getstate__(self):
        return {**self.__dict__, "_policy": None}

    def load(self):
        if self._policy is None:
            import torch

            from rewardmill.transforms.sampling.transformers_generate import load_policy

            torch.manual_seed(0)
            self._policy = load_policy(self.model_dir, self.device)
        return self._policy

    def continue_many(self, requests: Sequence[PrefixRequest]) -> list[list[str]]:
        """k continuation texts per request, in request order."""
        from rewardmill.transforms.sampling.transformers_generate import generate_from_texts

        policy = self.load()
        texts = [prompt_text(policy.tokenizer, r) for r in requests]
        sp, size = self.sampling.sampling(self.k), self.sampling.batch_size
        out: list[list[str]] = []
        for start in range(0, len(requests), size):
            keys = [r.key for r in requests[start : start + size]]
            for samples in generate_from_texts(policy, texts[start : start + size], keys, sp, strip=False):
                out.append([s.completion for s in samples])
        return out

    def close(self) -> None:
        self._policy = None


def vllm_continuation_kwargs(sampling: ContinuationSampling, k: int, key: str) -> dict:
    """Our settings -> `vllm.SamplingParams` keyword arguments for one prefix (pure; testable without vLLM)."""
    return {
        "n": k,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k,  # 0 disables top-k in vLLM >= 0.10
        "max_tokens": sampling.max_new_tokens,
        "seed": prompt_seed(sampling.seed, key),
    }


class VLLMContinuer:
    """k continuations per prefix with offline vLLM (GPU or CPU build): one seeded request of n=k samples per prefix,
    on the process's shared engine (`vllm_engine.engine`), prompts as token ids like the transformers continuer."""

    backend = "vllm"

    def __init__(self, model_dir: str, sampling: ContinuationSampling, k: int, llm_kwargs: dict | None = None):
        self.model_dir, self.sampling, self.k = model_dir, sampling, k
        self.llm_kwargs = dict(llm_kwargs or {})
        self._llm = None

    def __getstate__(self):
        return {**self.__dict__, "_llm": None}

    def load(self):
        if self._llm is None:
            from rewardmill.transforms.sampling.vllm_engine import engine

            self._llm = engine(self.model_dir, self.llm_kwargs)
        return self._llm

    def continue_many(self, requests: Sequence[PrefixRequest]) -> list[list[str]]:
        from vllm import SamplingParams as VLLMSamplingParams

        from rewardmill.transforms.sampling.vllm_engine import token_prompts

        llm = self.load()
        tokenizer = llm.get_tokenizer()
        prompts = token_prompts(tokenizer, [prompt_text(tokenizer, r) for r in requests])
        params = [VLLMSamplingParams(**vllm_continuation_kwargs(self.sampling, self.k, r.key)) for r in requests]
        outputs = llm.generate(prompts, params, use_tqdm=False)
        return [[o.text for o in sorted(out.outputs, key=lambda o: o.index)] for out in outputs]

    def close(self) -> None:
        self._llm = None  # the engine stays up for the process's other users


class CachedContinuer:
    """A continuer behind a content-keyed cache (.rewardmill/cache/continuations): a rerun, a resumed stage or
    another steps stage asking for the same prefix (MC and binary search share most) generates nothing again.

    Key = sha256(policy fingerprint, backend, sampling, k, messages, prefix, key): everything a sample depends on.
    """

    def __init__(self, inner, cache_dir: str | None, fingerprint: str, flush_every: int = 64):
        self.inner, self.fingerprint = inner, fingerprint
        self._store = (
            SegmentStore(storage.join(cache_dir, f"{inner.backend}-{fingerprint[:16]}"), "continuations", flush_every)
            if cache_dir
            else None
        )
        self.generated = 0  # continuations this process generated (cache misses x k)

    def key_of(self, request: PrefixRequest) -> str:
        ident = {
            "policy": self.fingerprint,
            "backend": self.inner.backend,
            "sampling": asdict(self.inner.sampling),
            "k": self.inner.k,
            "messages": list(request.messages),
            "prefix": request.prefix,
            "key": request.key,
            "text": "as_generated",  # earlier entries were stripped, which glued "= 7" and "\n12" into "= 712"
        }
        return hashlib.sha256(json.dumps(ident, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def cached(self, request: PrefixRequest) -> list[str] | None:
        """The cached continuations of `request`, or None (what `rewardmill plan` asks)."""
        return None if self._store is None else self._store.get(self.key_of(request))

    def continue_many(self, requests: Sequence[PrefixRequest]) -> list[list[str]]:
        keys = [self.key_of(r) for r in requests]
        found = {k: self._store.get(k) for k in keys} if self._store is not None else {}
        missing = [i for i, k in enumerate(keys) if found.get(k) is None]
        if missing:
            fresh = self.inner.continue_many([requests[i] for i in missing])
            self.generated += sum(len(texts) for texts in fresh)
            for i, texts in zip(missing, fresh, strict=True):
                found[keys[i]] = texts
                if self._store is not None:
                    self._store.put(keys[i], texts)
            if self._store is not None:
                self._store.flush()
        return [list(found[k]) for k in keys]

    def close(self) -> None:
        if self._store is not None:
            self._store.flush()
        self.inner.close()
