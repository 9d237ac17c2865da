"""Judge client on a local transformers model (default: the materialized policy folder), CPU or GPU.

Requests are generated in batches of `config.batch_size` (left padding), sorted by prompt length. Temperature 0
is greedy; otherwise each sample draws from its own generator seeded by (sampling.seed, request content, sample
index), so a judgment's tokens are a function of the request alone: what the call cache and reruns rely on. Its
logprobs are not quite: the batch's padding and shape move them in the 5th significant digit (measured on CPU).
`config.batch_invariant` generates each request alone, so they are exact functions of the request too.
"""

import hashlib
import json
import logging
import secrets
from dataclasses import dataclass

from rewardmill.transforms.judges.client import BackendConfig, Completion, JudgeRequest, JudgeResponse, TokenLogprob
from rewardmill.transforms.sampling.params import sample_seed
from rewardmill.transforms.sampling.policy import model_identity
from rewardmill.transforms.sampling.transformers_generate import LoadedPolicy, chat_texts, load_policy

log = logging.getLogger("rewardmill")


def request_digest(request: JudgeRequest) -> str:
    """What a sample's seed depends on besides (seed, index): the conversation's content."""
    return hashlib.sha256(json.dumps(request.messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class _Prepared:
    index: int  # position in the caller's list
    request: JudgeRequest
    text: str  # the chat-templated prompt


class TransformersJudgeClient:
    """JudgeClient on a local model. `device` "cpu" (default, bit-reproducible in float32) or e.g. "cuda".

    The model loads on the first `complete()` (a model that cannot load raises there: that is no per-request
    failure); pickling ships the settings only, so Beam can send it to workers.
    """

    def __init__(self, config: BackendConfig, device: str = "cpu"):
        self.config = config
        self.device = device
        # batch-invariant judgments differ from batched ones in their last bits: another cache entry
        self.model_id = model_identity(config.model, config.dtype) + (
            "|batch-invariant" if config.batch_invariant else ""
        )
        self._policy: LoadedPolicy | None = None
        self._usage = self._zero_usage()

    @staticmethod
    def _zero_usage() -> dict[str, int]:
        return {"requests": 0, "failures": 0, "generate_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def __getstate__(self):
        return {**self.__dict__, "_policy": None, "_usage": self._zero_usage()}

    def __repr__(self) -> str:
        return f"TransformersJudgeClient(model={self.config.model!r}, device={self.device!r})"

    def _load(self) -> LoadedPolicy:
        if self._policy is None:
            import torch

            policy = load_policy(self.config.model, self.device)
            if self.config.dtype != "float32":
                policy.model.to(getattr(torch, self.config.dtype))
            self._policy = policy
        return self._policy

    def usage(self) -> dict[str, int]:
        return dict(self._usage)

    def close(self) -> None:
        self._policy = None

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        if not requests:
            return []
        policy = self._load()
        responses: list[JudgeResponse | None] = [None] * len(requests)
        groups: dict[tuple, list[_Prepared]] = {}
        for i, request in enumerate(requests):
            try:
                text = chat_texts(policy.tokenizer, [list(request.messages)])[0]
            except Exception as exc:  # a malformed conversation fails alone, not its batch
                responses[i] = _failed(exc)
                continue
            s = request.sampling
            # One generate call shares max_new_tokens, temperature and top_p; seeds and n stay per request.
            groups.setdefault((s.temperature, s.top_p, s.max_tokens), []).append(_Prepared(i, request, text))
        size = 1 if self.config.batch_invariant else max(1, self.config.batch_size)
        for group in groups.values():
            # Similar lengths share a batch: less left padding, which on CPU is most of a judge call's cost.
            group.sort(key=lambda item: (_n_tokens(policy.tokenizer, item.text), item.index))
            for start in range(0, len(group), size):
                batch = group[start : start + size]
                try:
                    results = self._generate(policy, batch)
                except Exception as exc:  # e.g. out of memory: this batch fails, the others still run
                    log.warning("judge %s: generate failed for %d requests: %s", self.model_id[:12], len(batch), exc)
                    results = [_failed(exc)] * len(batch)
                for item, response in zip(batch, results, strict=True):
                    responses[item.index] = response
        self._usage["requests"] += len(requests)
        self._usage["failures"] += sum(r.error is not None for r in responses)
        return responses

    def _generate(self, policy: LoadedPolicy, batch: list[_Prepared]) -> list[JudgeResponse]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        from rewardmill.transforms.sampling.seeded import SeededSampler

        tok = policy.tokenizer
        sampling = batch[0].request.sampling  # temperature, top_p, max_tokens are shared by the group
        greedy = sampling.temperature == 0
        # Greedy samples are all equal: generate one row per request and repeat it n times.
        rows = [1 if greedy else max(1, item.request.sampling.n) for item in batch]
        enc = tok([item.text for item in batch], return_tensors="pt", padding=True, add_special_tokens=False)
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        repeats = torch.tensor(rows)
        enc = {k: v.repeat_interleave(repeats, dim=0).to(policy.model.device) for k, v in enc.items()}
        want_logprobs = max(item.request.sampling.top_logprobs for item in batch) > 0
        config = GenerationConfig(
            do_sample=False,  # greedy, or the SeededSampler draws the token and greedy just takes it
            max_new_tokens=sampling.max_tokens,
            eos_token_id=policy.eos_token_ids,
            pad_token_id=tok.pad_token_id,
            return_dict_in_generate=True,
            output_logits=want_logprobs,  # the raw next-token logits, before any processor or sampling
        )
        processors = LogitsProcessorList()
        if not greedy:
            seeds = [
                sample_seed(_base_seed(item.request.sampling.seed), request_digest(item.request), j)
                for item, n in zip(batch, rows, strict=True)
                for j in range(n)
            ]
            processors.append(SeededSampler(seeds, sampling.temperature, 0, sampling.top_p, policy.eos_token_ids))
        with torch.inference_mode():
            out = policy.model.generate(**enc, generation_config=config, logits_processor=processors)
        self._usage["generate_calls"] += 1
        generated = out.sequences[:, enc["input_ids"].shape[1] :].cpu()
        logits = torch.stack(out.logits, dim=1).cpu() if want_logprobs else None  # rows x steps x vocab
        eos = torch.tensor(policy.eos_token_ids)

        responses, row = [], 0
        for item, n, n_prompt in zip(batch, rows, prompt_tokens, strict=True):
            completions, n_completion = [], 0
            for _ in range(n):
                ids = generated[row]
                stops = torch.isin(ids, eos).nonzero()
                n_tokens = int(stops[0, 0]) + 1 if len(stops) else len(ids)  # the stop token counts, as in rollouts
                content = ids[: n_tokens - 1] if len(stops) else ids[:n_tokens]  # ...but is not text
                top_k = item.request.sampling.top_logprobs
                completions.append(
                    Completion(
                        text=tok.decode(ids[:n_tokens].tolist(), skip_special_tokens=True).strip(),
                        finish_reason="stop" if len(stops) else "length",
                        logprobs=_token_logprobs(tok, content, logits[row], top_k) if top_k > 0 else None,
                    )
                )
                n_completion += n_tokens
                row += 1
            if greedy:
                completions *= max(1, item.request.sampling.n)
                n_completion *= max(1, item.request.sampling.n)
            self._usage["prompt_tokens"] += int(n_prompt)
            self._usage["completion_tokens"] += n_completion
            responses.append(JudgeResponse(tuple(completions), int(n_prompt), n_completion))
        return responses


def _n_tokens(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])


def _base_seed(seed: int | None) -> int:
    return seed if seed is not None else secrets.randbits(63)  # None: deliberately not reproducible


def _token_logprobs(tok, ids, logits, top_k: int) -> tuple[TokenLogprob, ...]:
    """Per generated position: the chosen token's logprob and the top_k alternatives, best first, from the raw
    next-token distribution (log_softmax of the logits, no temperature or top-p). Token ids that decode to the same
    string keep the best logprob (as an endpoint's string-keyed `top_logprobs` would)."""
    import torch

    logprobs = torch.log_softmax(logits[: len(ids)].float(), dim=-1)
    values, indices = logprobs.topk(top_k, dim=-1)
    result = []
    for position, token_id in enumerate(ids.tolist()):
        top: dict[str, float] = {}
        for value, index in zip(values[position].tolist(), indices[position].tolist(), strict=True):
            top.setdefault(tok.decode([index]), value)
        result.append(TokenLogprob(tok.decode([token_id]), float(logprobs[position, token_id]), top))
    return tuple(result)


def _failed(exc: Exception) -> JudgeResponse:
    return JudgeResponse(completions=(), error=f"{type(exc).__name__}: {exc}"[:500])
