"""Build the judge client a `backend:` config block names, behind the call cache when it has a `cache_dir`."""

from rewardmill.transforms.judges.call_cache import CachedJudgeClient
from rewardmill.transforms.judges.client import BackendConfig, JudgeClient


def make_client(config: BackendConfig) -> JudgeClient:
    """transformers -> TransformersJudgeClient (local model), vllm -> VLLMJudgeClient (local model on in-process
    vLLM), openai -> OpenAIJudgeClient (any compatible endpoint).

    All load lazily, so the result pickles and can be built at pipeline construction time; the openai backend
    raises ValueError here when its API key variable is unset (and the endpoint is not local).
    """
    if config.kind == "transformers":
        from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient

        client: JudgeClient = TransformersJudgeClient(config)
    elif config.kind == "vllm":
        from rewardmill.transforms.judges.vllm_client import VLLMJudgeClient

        client = VLLMJudgeClient(config)
    elif config.kind == "openai":
        from rewardmill.transforms.judges.openai_client import OpenAIJudgeClient

        client = OpenAIJudgeClient(config)
    else:
        raise ValueError(f"judge backend kind {config.kind!r} is not one of 'transformers', 'vllm', 'openai'")
    return CachedJudgeClient(client, config.cache_dir) if config.cache_dir else client
