"""Judge client on in-process vLLM (GPU build, or the CPU build): the fast local judge on a GPU box.

Requests go to the process's shared engine (`vllm_engine.engine`, so a judge on the policy shares the policy's
engine) in one `LLM.generate` call: vLLM batches and schedules them itself. Prompts are token ids of the
chat-templated text, as in the transformers client. `top_logprobs` asks vLLM for the top alternatives at every
generated position, from the raw (untempered) distribution: what G-Eval scores and P(yes) votes read. Temperature 0
is greedy; otherwise each request is seeded by (sampling.seed, request content), so a judgment is a function of
the request alone, never of its batch mates: what the call cache and reruns rely on.
"""

import logging

from rewardmill.transforms.judges.client import BackendConfig, Completion, JudgeRequest, JudgeResponse, TokenLogprob
from rewardmill.transforms.judges.transformers_client import request_digest
from rewardmill.transforms.sampling.params import prompt_seed
from rewardmill.transforms.sampling.policy import model_identity
from rewardmill.transforms.sampling.transformers_generate import chat_texts

log = logging.getLogger("rewardmill")


def vllm_judge_kwargs(request: JudgeRequest) -> dict:
    """A request's sampling -> `vllm.SamplingParams` keyword arguments (pure)."""
    s = request.sampling
    kwargs = {"n": max(1, s.n), "temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens}
    if s.temperature > 0 and s.seed is not None:
        kwargs["seed"] = prompt_seed(s.seed, request_digest(request))
    if s.top_logprobs > 0:
        kwargs["logprobs"] = s.top_logprobs
    return kwargs


class VLLMJudgeClient:
    """JudgeClient on a local model folder served by in-process vLLM. The engine starts on the first `complete()`
    (a model vLLM cannot load raises there: no per-request failure); pickling ships the settings only."""

    def __init__(self, config: BackendConfig):
        self.config = config
        # vLLM's kernels give other numbers than transformers': its judgments are cached apart.
        self.model_id = f"vllm|{model_identity(config.model, config.dtype)}"
        self._llm = None
        self._usage = self._zero_usage()

    @staticmethod
    def _zero_usage() -> dict[str, int]:
        return {"requests": 0, "failures": 0, "generate_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def __getstate__(self):
        return {**self.__dict__, "_llm": None, "_usage": self._zero_usage()}

    def __repr__(self) -> str:
        return f"VLLMJudgeClient(model={self.config.model!r})"

    def _load(self):
        if self._llm is None:
            from rewardmill.transforms.sampling.vllm_engine import engine

            self._llm = engine(self.config.model, {"dtype": self.config.dtype, **self.config.vllm})
        return self._llm

    def usage(self) -> dict[str, int]:
        return dict(self._usage)

    def close(self) -> None:
        self._llm = None  # the engine stays up for the process's other users

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        if not requests:
            return []
        from vllm import SamplingParams

        from rewardmill.transforms.sampling.vllm_engine import token_prompts

        llm = self._load()
        tokenizer = llm.get_tokenizer()
        responses: list[JudgeResponse | None] = [None] * len(requests)
        todo, prompts, params = [], [], []
        for i, request in enumerate(requests):
            try:
                text = chat_texts(tokenizer, [list(request.messages)])[0]
                prompt = token_prompts(tokenizer, [text])[0]
                param = SamplingParams(**vllm_judge_kwargs(request))
            except Exception as exc:  # a malformed conversation fails alone, not its batch
                responses[i] = _failed(exc)
                continue
            todo.append(i)
            prompts.append(prompt)
            params.append(param)
        if todo:
            try:
                outputs = llm.generate(prompts, params, use_tqdm=False)
                self._usage["generate_calls"] += 1
                eos = {tokenizer.eos_token_id}
                for i, out in zip(todo, outputs, strict=True):
                    responses[i] = self._response(tokenizer, out, requests[i].sampling.top_logprobs, eos)
            except Exception as exc:  # e.g. a prompt longer than the model's context: these requests fail
                log.warning("judge %s: generate failed for %d requests: %s", self.model_id[:24], len(todo), exc)
                for i in todo:
                    responses[i] = _failed(exc)
        self._usage["requests"] += len(requests)
        self._usage["failures"] += sum(r.error is not None for r in responses)
        return responses

    def _response(self, tokenizer, out, top_k: int, eos: set[int]) -> JudgeResponse:
        completions, n_completion = [], 0
        for o in sorted(out.outputs, key=lambda o: o.index):
            n_completion += len(o.token_ids)
            logprobs = None
            if top_k > 0 and o.logprobs is not None:
                logprobs = tuple(
                    _position(tokenizer, token_id, alternatives, top_k)
                    for token_id, alternatives in zip(o.token_ids, o.logprobs, strict=True)
                    if token_id not in eos  # the stop token counts but is not text, as in the transformers client
                )
            finish = "length" if o.finish_reason == "length" else "stop"
            completions.append(Completion(text=o.text.strip(), finish_reason=finish, logprobs=logprobs))
        n_prompt = len(out.prompt_token_ids or [])
        self._usage["prompt_tokens"] += n_prompt
        self._usage["completion_tokens"] += n_completion
        return JudgeResponse(tuple(completions), n_prompt, n_completion)


def _position(tokenizer, token_id: int, alternatives: dict, top_k: int) -> TokenLogprob:
    """One generated position: the chosen token and the top_k alternatives, best first; ids that decode to the same
    string keep the best logprob (as an endpoint's string-keyed `top_logprobs` would)."""

    def text(tid: int, entry) -> str:
        return entry.decoded_token if entry.decoded_token is not None else tokenizer.decode([tid])

    ranked = sorted(alternatives.items(), key=lambda item: item[1].logprob, reverse=True)
    top: dict[str, float] = {}
    for tid, entry in ranked:
        if entry.rank is not None and entry.rank > top_k:
            continue  # the sampled token, returned beside the top_k when it is not among them
        top.setdefault(text(tid, entry), float(entry.logprob))
    chosen = alternatives[token_id]
    return TokenLogprob(text(token_id, chosen), float(chosen.logprob), top)


def _failed(exc: Exception) -> JudgeResponse:
    return JudgeResponse(completions=(), error=f"{type(exc).__name__}: {exc}"[:500])
