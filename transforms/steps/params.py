"""params `steps.<NAME>`: one steps stage's entry (its StepsConfig, tasks, sample, continuation backend, chunks and
budget), and the pure choices made from it: which rollouts get step labels (`select`, `Chosen`, `selection`) and which
model folder continues them (`continuation_model`). The steps stage and `rewardmill plan` both read them here.
"""

from dataclasses import dataclass, field
from typing import Literal

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.planning.budget import Budget
from rewardmill.transforms.sampling.pool import unknown_policy
from rewardmill.transforms.stage.conservation import id_frame
from rewardmill.transforms.steps.labeler import StepsConfig


@dataclass(frozen=True)
class StepsParams:
    """params `steps.<NAME>`."""

    config: dict = field(default_factory=dict)  # StepsConfig: method, k, segment, continuation, verifier, judge
    tasks: tuple[str, ...] = ("math",)  # prompt tasks to label (MC needs answers a rule verifier can check)
    max_rollouts: int | None = None  # a fixed sample of the rollouts (lowest ids); None = every eligible one
    backend: Literal["transformers", "vllm"] = "transformers"  # continuations: the policy on CPU/GPU, or vLLM
    device: str = "cpu"  # transformers backend
    vllm: dict = field(default_factory=dict)  # extra vllm.LLM(...) kwargs
    chunk_size: int = 32  # rollouts per work item (batched together in each search round)
    # A candidate pool's member (rollouts.policies) whose rollouts get step labels, continued by that member's own
    # model folder: Monte Carlo estimates are the policy's own. null = the rollouts' only policy.
    policy: str | None = None
    num_shards: int = 1
    # The most this stage sends in one run (a request = one prefix's k continuations, or one judge call); prompts
    # beyond it are rejected with reason `budget`, and a rerun with a larger budget continues from the caches.
    budget: Budget = field(default_factory=Budget)

    def __post_init__(self):
        if self.max_rollouts is not None and self.max_rollouts < 1:
            raise ValueError(f"max_rollouts must be >= 1 or null, got {self.max_rollouts!r}")
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size!r}")


def resolve(name: str, params: StepsParams) -> StepsConfig:
    config = from_dict(StepsConfig, params.config, f"steps.{name}.config")
    if config.continuation.batch_invariant and params.backend != "transformers":
        raise ConfigError(
            f"params.yaml: steps.{name}.config.continuation.batch_invariant is built for backend transformers, not "
            f"{params.backend} (vLLM batches as its engine decides)"
        )
    return config


def select(
    rows: list[dict], tasks: tuple[str, ...], max_rollouts: int | None, policy: str | None = None
) -> tuple[list[dict], dict]:
    """Pure: the eligible rollouts (of `policy`, when named) in rollout-id order, capped; and counts of what was left
    out and why."""
    own = rows if policy is None else [r for r in rows if r["policy"]["name"] == policy]
    eligible = sorted((r for r in own if r.get("task") in tasks), key=lambda r: r["rollout_id"])
    chosen = eligible if max_rollouts is None else eligible[:max_rollouts]
    counts = {
        "rollouts": len(rows),
        "other_tasks": len(own) - len(eligible),
        "not_sampled": len(eligible) - len(chosen),
        "selected": len(chosen),
    }
    if policy is not None:
        counts["other_policies"] = len(rows) - len(own)
    return chosen, counts


def continuation_model(name: str, policy: str | None, policies: dict[str, dict], model_dir: str) -> str:
    """The folder whose model continues the selected rollouts: a named pool member's own, else --model. Fails
    (naming the known members) for a policy the rollouts do not have, an endpoint member (continuations need the
    weights), or a pool with no policy named (continuations from another policy would not be on-policy)."""
    where = f"params.yaml: steps.{name}.policy"
    if policy is None:
        if len(policies) > 1:
            raise ConfigError(
                f"{where}: the rollouts come from policies {sorted(policies)}; name the one whose rollouts get step "
                "labels (continuations must come from the policy that wrote the rollout)"
            )
        return model_dir
    if policy not in policies:
        raise ConfigError(f"{where}: {unknown_policy(policy, list(policies))}")
    folder = policies[policy].get("model")
    if folder is None:
        raise ConfigError(
            f"{where}: '{policy}' is served by an endpoint (backend {policies[policy]['backend']}); Monte Carlo "
            "continuations need its weights in a local folder: name a transformers or vllm member"
        )
    return folder


def selection(rollouts_dir: str, params: StepsParams) -> tuple[str, dict]:
    """The last chosen rollout id ("" when none is: no id is <= "") and the selection counts, from the rollouts' id
    columns."""
    rows = id_frame(rollouts_dir, ["rollout_id", "task", "policy"]).to_dicts()  # policy: {name, fingerprint, ...}
    chosen, counts = select(rows, params.tasks, params.max_rollouts, params.policy)
    return (chosen[-1]["rollout_id"] if chosen else ""), counts


class Chosen:
    """Whether a rollout is in the selection: of the tasks (and policy) asked for, with an id up to the last chosen
    one (the selection is the lowest eligible ids)."""

    def __init__(self, params: StepsParams, last_id: str | None):
        self.tasks = params.tasks
        self.policy = params.policy
        self.last_id = last_id  # None: every eligible rollout (the voters for pseudo-references)

    def __call__(self, row: dict) -> bool:
        own = self.policy is None or row["policy"]["name"] == self.policy
        in_sample = self.last_id is None or row["rollout_id"] <= self.last_id
        return own and row.get("task") in self.tasks and in_sample
