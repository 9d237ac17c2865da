"""A batch of prompts as environment episodes, in the shape the rollouts stage caches and writes: n Samples per
prompt, each carrying its trajectory's ROLLOUT_V3 columns."""

from collections.abc import Callable
from typing import Any

from rewardmill.transforms.environments.columns import trajectory_columns
from rewardmill.transforms.environments.contract import PromptingEnvironment, ToolEnvironment, has_hook
from rewardmill.transforms.environments.episodes import (
    EpisodeLimits,
    Trajectory,
    TurnGenerate,
    fed_prompt,
    run_episodes,
)
from rewardmill.transforms.sampling.params import Sample, SamplingParams


def run_batch(
    environment,
    limits: EpisodeLimits,
    prompts: list[dict[str, Any]],
    sp: SamplingParams,
    generate: TurnGenerate,
    split: Callable[[str], Any] | None = None,
) -> list[list[Sample]]:
    """sp.n trajectories per prompt (seeded as single-turn samples are), each as a Sample with `trajectory` set;
    `split` (transforms/sampling/reasoning.py) takes each turn's reasoning apart from its answer."""
    tools = environment.tools() if has_hook(environment, ToolEnvironment) else None
    system = environment.system_message() if has_hook(environment, PromptingEnvironment) else None
    trajectories = run_episodes(environment, prompts, sp.n, sp.seed, generate, limits, tools, split)
    fed = [None if system is None else fed_prompt(p["messages"], system) for p in prompts]
    return [[as_sample(t, environment, tools, f) for t in per] for f, per in zip(fed, trajectories, strict=True)]


def as_sample(
    trajectory: Trajectory, environment, tools: list[dict[str, Any]] | None, prompt_messages: list | None = None
) -> Sample:
    """A trajectory as a Sample; `prompt_messages`: the prompt as fed, when the environment added a system message."""
    columns = trajectory_columns(trajectory, environment, tools, prompt_messages)
    return Sample(
        index=trajectory.index,
        seed=trajectory.seed,
        completion=columns.pop("completion"),
        n_tokens=columns.pop("n_tokens"),
        finish_reason=columns.pop("finish_reason"),
        logprob_sum=columns.pop("logprob_sum"),
        trajectory=columns,
    )
