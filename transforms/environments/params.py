"""params `rollouts.environment`: which environment runs each prompt's episodes, its config and the limits."""

from dataclasses import asdict, dataclass, field
from typing import Any

from rewardmill.transforms.config import from_dict
from rewardmill.transforms.environments.columns import canonical_json
from rewardmill.transforms.environments.episodes import EpisodeLimits


@dataclass(frozen=True)
class EnvironmentParams:
    name: str  # a registry key (transforms/environments/__init__.py) or an entry point's name
    config: dict[str, Any] = field(default_factory=dict)  # the environment's Config, as params
    max_turns: int = 3  # assistant turns per trajectory
    max_tokens: int | None = None  # assistant tokens per trajectory over all turns (None: max_turns alone)

    def __post_init__(self):
        self.limits()  # validates the limits

    def limits(self) -> EpisodeLimits:
        return EpisodeLimits(self.max_turns, self.max_tokens)

    def resolve(self):
        """(environment class, its Config instance): an unknown name or a bad config raises, naming it."""
        from rewardmill.transforms.environments import get_environment_class

        cls = get_environment_class(self.name)
        return cls, from_dict(cls.Config, self.config, "rollouts.environment.config")

    def episode(self, reasoning=None) -> str:
        """What a trajectory depends on besides the policy and the sampling: the environment's name, version and
        config, the limits, and the reasoning tags when set (the environment reads each turn's answer without its
        trace), as canonical JSON (SamplingParams.episode: in the cache keys and rollout ids)."""
        cls, config = self.resolve()
        identity = {
            "environment": cls.name,
            "version": str(cls.version),
            "config": asdict(config),
            "max_turns": self.max_turns,
            "max_tokens": self.max_tokens,
        }
        if reasoning is not None:  # absent when off: the episodes sampled before keep their ids
            identity["reasoning"] = asdict(reasoning)
        return canonical_json(identity)
