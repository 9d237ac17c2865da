"""Build the judge client a `backend:` config block names, behind the call cache when it has a `cache_dir`, and
behind the special-token guard always (guarded_client.py: untrusted text never reaches a tokenizer raw)."""

from rewardmill.transforms.judges.call_cache import CachedJudgeClient
from rewardmill.transforms.judges.client import BackendConfig, JudgeClient
from rewardmill.transforms.judges.guarded_client import GuardedJudgeClient

# Set while `rewardmill plan` runs (transforms/planning/judge_calls.py): a factory of clients that count the requests
# a labeler would send, against the call cache, and send none. Judges build every client here, inner ones included.
planning_factory = None


def make_client(config: BackendConfig) -> JudgeClient:
    """The client for `config`, guarded; while a plan runs, its counting stand-in (nothing is sent), guarded too so
    it counts the calls that would really be keyed."""
    if planning_factory is not None:
        return GuardedJudgeClient(planning_factory(config), config)
    return GuardedJudgeClient(build_client(config), config)


def build_client(config: BackendConfig) -> JudgeClient:
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
