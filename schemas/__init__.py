"""Versioned pyarrow schemas for every dataset that crosses a stage boundary.

Writers always pass one of these explicitly: pyarrow and Beam otherwise infer types from the first row and
silently drop unknown keys. Bump the version suffix when a column changes meaning or type.
"""

from rewardmill.schemas.common import schema_id
from rewardmill.schemas.label import LABEL_V1
from rewardmill.schemas.pair import PAIR_ASPECT_V1, PAIR_V2, PAIR_V3
from rewardmill.schemas.prompt import PROMPT_V1
from rewardmill.schemas.reject import REJECT_V1
from rewardmill.schemas.reward import REWARD_V1
from rewardmill.schemas.rl import RL_V1, RL_V2
from rewardmill.schemas.rollout import ROLLOUT_V2, ROLLOUT_V3
from rewardmill.schemas.rubric import RUBRIC_V1
from rewardmill.schemas.sft import SFT_V1, SFT_V2
from rewardmill.schemas.step import PRM_V1, STEP_LABEL_V1

# The current schema of each dataset, by name.
SCHEMAS = {
    "prompt": PROMPT_V1,
    "rollout": ROLLOUT_V2,
    "label": LABEL_V1,
    "pair": PAIR_V2,
    "pair_aspect": PAIR_ASPECT_V1,
    "reward": REWARD_V1,
    "rl": RL_V1,
    "rubric": RUBRIC_V1,
    "sft": SFT_V1,
    "reject": REJECT_V1,
    "step_label": STEP_LABEL_V1,
    "prm": PRM_V1,
}

# Datasets written in more than one current version: rollouts are v2 for single-turn sampling (as before, byte for
# byte) and v3 when an environment runs multi-turn episodes; readers take either. So are the datasets built from
# them: pairs v3, SFT v2 and RL v2 when the rollouts are trajectories.
CURRENT_VERSIONS = {
    "rollout": (ROLLOUT_V2, ROLLOUT_V3),
    "pair": (PAIR_V2, PAIR_V3),
    "sft": (SFT_V1, SFT_V2),
    "rl": (RL_V1, RL_V2),
}


def current_ids(name: str) -> frozenset[str]:
    """The schema ids a reader of dataset `name` takes: every current version's (`pair` -> pair_v2, pair_v3)."""
    return frozenset(schema_id(s) for s in CURRENT_VERSIONS.get(name, (SCHEMAS[name],)))


__all__ = [
    "CURRENT_VERSIONS",
    "LABEL_V1",
    "PAIR_ASPECT_V1",
    "PAIR_V2",
    "PAIR_V3",
    "PRM_V1",
    "PROMPT_V1",
    "REJECT_V1",
    "REWARD_V1",
    "RL_V1",
    "RL_V2",
    "RUBRIC_V1",
    "ROLLOUT_V2",
    "ROLLOUT_V3",
    "SCHEMAS",
    "SFT_V1",
    "SFT_V2",
    "STEP_LABEL_V1",
    "current_ids",
]
