"""pair: a TRL conversational preference row (data/datasets/pairs/).

`prompt`, `chosen`, `rejected` load into TRL's DPO/reward trainers as is; `margin` is RewardTrainer's
optional margin column. The remaining columns keep lineage and let users re-filter.
"""

import pyarrow as pa

from rewardmill.schemas.common import MESSAGES, list_of, versioned

PAIR_V1 = versioned(
    "pair",
    1,
    [
        pa.field("pair_id", pa.string(), nullable=False),  # hash of prompt_id + both rollout ids
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("prompt", MESSAGES, nullable=False),
        pa.field("chosen", MESSAGES, nullable=False),
        pa.field("rejected", MESSAGES, nullable=False),
        pa.field("score_chosen", pa.float64(), nullable=False),
        pa.field("score_rejected", pa.float64(), nullable=False),
        pa.field("margin", pa.float64(), nullable=False),
        pa.field("confidence", pa.float64(), nullable=False),
        pa.field("agreement", pa.float64(), nullable=False),  # share of labelers whose scores order the pair the same
        pa.field("pair_type", pa.string(), nullable=False),  # best_vs_worst | ...
        pa.field("chosen_rollout_id", pa.string(), nullable=False),
        pa.field("rejected_rollout_id", pa.string(), nullable=False),
        pa.field("chosen_n_tokens", pa.int32(), nullable=False),
        pa.field("rejected_n_tokens", pa.int32(), nullable=False),
        pa.field("label_sources", list_of(pa.string()), nullable=False),  # labeler@version that scored the pair
        pa.field("task", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
    ],
)
