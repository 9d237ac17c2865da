"""EnvironmentRewardVerifier: the environment's own outcome reward of a trajectory, as a label.

An environment (rollouts.environment) ends each episode with its reward in [0, 1] and its last step's info; the
rollouts stage keeps both (`env_reward`, `env_info`, with `stop_reason`). This labeler makes them a label, so the
assemble stage can gate, weigh and pair on them like any verifier's, and the label stage's counts and the card show
them. The environment is trusted code (its verifier ran in the rollouts stage, on the final committed answer): the
label repeats its decision, it does not re-judge.

Episodes that did not end with a reward are said apart:
- `stop_reason` error: the environment raised, so nothing was decided: verdict `error`, score None, the error in the
  rationale (counted; never a silent 0);
- `max_turns` / `max_tokens` before any reward: the policy used up its turns or tokens without finishing, which is
  `unfinished_score` (default 0.0, incorrect: an agent that never answers has not solved the task; null = abstain);
- a rollout with no environment (single turn): abstain, score None.
"""

import json
import math
from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label

UNFINISHED = ("max_turns", "max_tokens")


@dataclass(frozen=True)
class EnvironmentRewardConfig:
    pass_threshold: float = 1.0  # a reward at or above this is verdict correct (partial credit below it: incorrect)
    unfinished_score: float | None = 0.0  # an episode cut by max_turns / max_tokens with no reward; null = abstain

    def __post_init__(self):
        if not 0.0 < self.pass_threshold <= 1.0:
            raise ValueError(f"pass_threshold must be in (0, 1], got {self.pass_threshold}")
        if self.unfinished_score is not None and not 0.0 <= self.unfinished_score <= 1.0:
            raise ValueError(f"unfinished_score must be in [0, 1] or null, got {self.unfinished_score}")


class EnvironmentRewardVerifier:
    """Score = the environment's outcome reward; verdict correct when it reaches `pass_threshold`.

    Input columns: env_reward, stop_reason, env_info, environment (ROLLOUT_V3).   Output: score (None = the episode
    has no reward: an error, or no environment), verdict, rationale, raw (JSON: environment, stop reason, info).
    """

    name = "environment"
    version = "1"
    reads = ("env_reward", "stop_reason", "env_info", "environment")
    Config = EnvironmentRewardConfig

    def __init__(self, config: EnvironmentRewardConfig | None = None):
        self.config = config or EnvironmentRewardConfig()

    def label(self, env_reward, stop_reason, env_info, environment) -> Label:
        if not environment:
            return Label(None, 0.0, "abstain", "no environment ran this rollout (a single-turn sample)")
        name = f"{environment['name']}@{environment['version']}"
        raw = json.dumps(
            {"environment": name, "stop_reason": stop_reason, "info": _info(env_info)},
            sort_keys=True,
            ensure_ascii=False,
        )
        if stop_reason == "error":
            why = _info(env_info).get("error", "no detail recorded")
            return Label(None, 0.0, "error", f"{name} raised, so the episode has no reward: {why}"[:500], raw)
        if env_reward is None or (isinstance(env_reward, float) and math.isnan(env_reward)):
            if stop_reason in UNFINISHED and self.config.unfinished_score is not None:
                score = self.config.unfinished_score
                verdict = "correct" if score >= self.config.pass_threshold else "incorrect"
                return Label(score, 1.0, verdict, f"{name}: stopped at {stop_reason} before a reward", raw)
            return Label(None, 0.0, "abstain", f"{name} gave no reward (stop reason {stop_reason})", raw)
        reward = float(env_reward)
        if not 0.0 <= reward <= 1.0:
            return Label(None, 0.0, "error", f"{name} gave reward {reward}, outside [0, 1]", raw)
        verdict = "correct" if reward >= self.config.pass_threshold else "incorrect"
        return Label(reward, 1.0, verdict, f"{name}: reward {reward:g} (stop reason {stop_reason})", raw)


def _info(text) -> dict:
    try:
        info = json.loads(text) if text else {}
    except (TypeError, ValueError):
        return {"unreadable": str(text)[:200]}
    return info if isinstance(info, dict) else {"value": info}
