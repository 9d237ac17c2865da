"""The plan of the rollouts stage: per policy, the prompts its rollout cache answers and the samples it would
generate for the others (n requests of up to max_new_tokens each; an endpoint gets one request per sample)."""

from pathlib import Path

from rewardmill.schemas import PROMPT_V1
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.planning.spend import Prices, StagePlan, priced
from rewardmill.transforms.planning.stages import Paths, missing
from rewardmill.transforms.planning.tokens import TokenCounter
from rewardmill.transforms.sampling.cache import RolloutCache


def plan_rollouts(cfg, prompts: list[dict], members, cache_dir: str | None, prices: Prices, tokens: TokenCounter):
    """`cfg`: the RolloutsConfig; `members`: its resolved pool; `cache_dir`: the stage's --cache."""
    plan = StagePlan("rollouts", "(prompt, policy) pairs")
    sampling = cfg.sampling()
    for m in members:
        cache = RolloutCache(cache_dir, m.info.fingerprint, m.backend, sampling)
        model = m.openai.model if m.backend == "openai" else m.model_dir
        price = prices.price(m.backend, model)
        for prompt in sorted(prompts, key=lambda p: p["prompt_id"]):
            plan.rows += 1
            if cache.has(prompt):
                plan.rows_cached += 1
                plan.cached += sampling.n
                continue
            tokens_in = tokens.chat(model, prompt["messages"]) * sampling.n
            spend = priced(price, model, sampling.n, tokens_in, sampling.n * sampling.max_new_tokens)
            plan.charge(prompt["prompt_id"], spend)
    if tokens.estimated:
        plan.notes.append(f"input tokens of {sorted(tokens.estimated)} estimated with the policy's tokenizer")
    return plan


def plan_rollouts_stage(paths: Paths, prices: Prices, cfg) -> StagePlan:
    """The rollouts stage's plan for params `rollouts` (`cfg`: its RolloutsConfig)."""
    if not storage.exists(paths.prompts):
        return missing("rollouts", "(prompt, policy) pairs", paths.prompts, "prompts")
    if not Path(paths.model).is_dir():
        return missing("rollouts", "(prompt, policy) pairs", paths.model, "model")
    members = cfg.pool(paths.model)
    prompts = read_rows(paths.prompts, PROMPT_V1)
    return plan_rollouts(cfg, prompts, members, paths.rollouts_cache, prices, TokenCounter(paths.model))
