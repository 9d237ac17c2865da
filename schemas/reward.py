"""reward: one rollout's aggregated reward and its named score vector (data/datasets/_rewards/).

assemble writes it beside the configs it builds (a `_` folder: not exported) so validate can measure the reward
distribution and length bias over every scored rollout, not only the ones that made pairs.
"""

import pyarrow as pa

from rewardmill.schemas.common import list_of, versioned
from rewardmill.schemas.pair import SCORES

REWARD_V1 = versioned(
    "reward",
    1,
    [
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("reward", pa.float64()),  # [0, 1]; null = no labeler could score the rollout
        pa.field("correct", pa.bool_()),  # the deciding rule verifier's verdict; null = no gate decided
        pa.field("verified_by", pa.string()),  # the gate labeler that decided `correct`
        pa.field("model_score", pa.float64()),  # weighted mean of the model-based scores; null = none
        pa.field("confidence", pa.float64(), nullable=False),  # [0, 1]
        pa.field("agreement", pa.float64()),  # [0, 1] agreement of the labels with each other; null = one label
        pa.field("n_tokens", pa.int32(), nullable=False),
        pa.field("finish_reason", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),  # kept | <reject reason>: whether outputs may use it
        pa.field("scores", SCORES, nullable=False),  # named score vector, sorted by name
        pa.field("label_sources", list_of(pa.string()), nullable=False),  # labeler@version
    ],
)
