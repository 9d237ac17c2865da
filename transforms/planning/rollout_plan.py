"""The plan of the rollouts stage: per policy, the prompts its rollout cache answers and the samples it would
generate for the others (n requests of up to max_new_tokens each; an endpoint gets one request per sample).

Episodes (rollouts.environment) are planned at their limit: each sample is up to `max_turns` requests (and output
tokens up to `max_tokens` over all its turns, when set), and turn t's input is the prompt plus the t assistant
turns before it at max_new_tokens each. The environment's own replies (tool output, feedback) are not counted: the
plan says so, and marks its requests as an upper bound."""

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
        price = prices.price(m.backend, model, batch_discount(m))
        for prompt in sorted(prompts, key=lambda p: p["prompt_id"]):
            plan.rows += 1
            if cache.has(prompt):
                plan.rows_cached += 1
                plan.cached += sampling.n
                continue
            requests, tokens_in, tokens_out = sample_spend(cfg, sampling, tokens.chat(model, prompt["messages"]))
            plan.charge(prompt["prompt_id"], priced(price, model, requests, tokens_in, tokens_out))
    if cfg.environment is not None:
        plan.bound = True
        plan.notes.append(
            f"episodes planned at their limit, {cfg.environment.max_turns} turns per sample; the environment's "
            "replies (tool output, feedback) are not in the input tokens"
        )
    if cfg.reasoning is not None:
        # A trace is sampled within a turn's max_new_tokens: the output bound holds it, and a budget's max_tokens caps
        # reasoning and answer together. How much was reasoning is known only after the run.
        plan.notes.append(
            "output tokens include the reasoning traces (within max_new_tokens per turn); the rollouts manifest's "
            "`tokens` says how many were reasoning"
        )
    if tokens.estimated:
        plan.notes.append(f"input tokens of {sorted(tokens.estimated)} estimated with the policy's tokenizer")
    return plan


def batch_discount(member) -> float:
    """The share of the price a member pays: a served policy with `batch:` its discount (docs/batch.md), else 1."""
    return member.openai.batch.discount if member.backend == "openai" and member.openai.batch else 1.0


def sample_spend(cfg, sp, prompt_tokens: int) -> tuple[int, int, int]:
    """(requests, input tokens, output tokens) of one prompt's n samples (`sp`: cfg.sampling()): one request each,
    or an episode's turns at their limit (the module docstring says how)."""
    if cfg.environment is None:
        return sp.n, prompt_tokens * sp.n, sp.n * sp.max_new_tokens
    turns = cfg.environment.max_turns
    per_sample_out = turns * sp.max_new_tokens
    if cfg.environment.max_tokens is not None:
        per_sample_out = min(per_sample_out, cfg.environment.max_tokens)
    per_sample_in = sum(prompt_tokens + t * sp.max_new_tokens for t in range(turns))
    return sp.n * turns, sp.n * per_sample_in, sp.n * per_sample_out


def plan_rollouts_stage(paths: Paths, prices: Prices, cfg) -> StagePlan:
    """The rollouts stage's plan for params `rollouts` (`cfg`: its RolloutsConfig)."""
    if not storage.exists(paths.prompts):
        return missing("rollouts", "(prompt, policy) pairs", paths.prompts, "prompts")
    if not Path(paths.model).is_dir():
        return missing("rollouts", "(prompt, policy) pairs", paths.model, "model")
    members = cfg.pool(paths.model)
    prompts = read_rows(paths.prompts, PROMPT_V1)
    return plan_rollouts(cfg, prompts, members, paths.rollouts_cache, prices, TokenCounter(paths.model))
