"""rl prompt: a prompt with its pass rate over the policy's own samples (data/datasets/rl/).

For group-relative RL (GRPO, RLOO): `prompt` is TRL's conversational prompt column; `reference`, `tests` and
`constraints` reach reward functions as keyword arguments. Prompts that every sample passes or every sample fails
give no group-relative signal: `zero_pass` / `all_pass` flag them rather than drop them.
"""

import pyarrow as pa

from rewardmill.schemas.common import MESSAGES, versioned
from rewardmill.schemas.trajectory import ENVIRONMENT

DIFFICULTIES = ("easy", "medium", "hard", "unsolved", "unverified")

RL_V1 = versioned(
    "rl",
    1,
    [
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("prompt", MESSAGES, nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field("reference", pa.string()),
        pa.field("tests", pa.string()),
        pa.field("constraints", pa.string()),
        pa.field("n_samples", pa.int32(), nullable=False),  # rollouts of this prompt
        pa.field("n_verified", pa.int32(), nullable=False),  # rollouts a rule verifier (gate) decided
        pa.field("n_correct", pa.int32(), nullable=False),
        pa.field("pass_rate", pa.float64()),  # n_correct / n_verified; null = no sample verified
        pa.field("mean_reward", pa.float64()),  # mean aggregated reward of the scored samples; null = none scored
        pa.field("difficulty", pa.string(), nullable=False),  # one of DIFFICULTIES, from pass_rate
        pa.field("zero_pass", pa.bool_(), nullable=False),  # verified samples all failed (0/k)
        pa.field("all_pass", pa.bool_(), nullable=False),  # verified samples all passed (k/k)
        pa.field("split", pa.string(), nullable=False),
    ],
)

# v2: RL prompts of an environment (trajectories; single-turn rollouts still give v1): the environment that ran the
# episodes, with its version and config, and the tools it offered, so a trainer rebuilds the same environment.
RL_V2 = versioned(
    "rl",
    2,
    [*RL_V1, pa.field("environment", ENVIRONMENT), pa.field("tools", pa.string())],
)
