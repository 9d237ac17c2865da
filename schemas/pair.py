"""pair: a TRL conversational preference row (data/datasets/pairs/).

`prompt`, `chosen`, `rejected` load into TRL's DPO/reward trainers as is; `margin` is RewardTrainer's
optional margin column. The remaining columns keep lineage and let users re-filter.

v2: the pair type is one of several strategies; each side carries its verified correctness and its named score
vector (every labeler/aspect score that went into the reward).
"""

import pyarrow as pa

from rewardmill.schemas.common import MESSAGES, list_of, versioned
from rewardmill.schemas.trajectory import CHAT_MESSAGES

# One named score: "labeler/aspect" -> score (null = that labeler could not score the rollout).
SCORE = pa.struct([pa.field("name", pa.string(), nullable=False), pa.field("score", pa.float64())])
SCORES = list_of(SCORE)

PAIR_TYPES = ("best_vs_worst", "best_vs_random", "all_above_margin", "correct_vs_incorrect", "length_matched")

PAIR_V2 = versioned(
    "pair",
    2,
    [
        pa.field("pair_id", pa.string(), nullable=False),  # hash of prompt_id + both rollout ids
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("prompt", MESSAGES, nullable=False),
        pa.field("chosen", MESSAGES, nullable=False),
        pa.field("rejected", MESSAGES, nullable=False),
        pa.field("score_chosen", pa.float64(), nullable=False),  # aggregated reward in [0, 1]
        pa.field("score_rejected", pa.float64(), nullable=False),
        pa.field("margin", pa.float64(), nullable=False),  # score_chosen - score_rejected, > 0
        pa.field("confidence", pa.float64(), nullable=False),  # min of the two rollouts' confidence
        pa.field("agreement", pa.float64(), nullable=False),  # share of labelers whose scores order the pair the same
        pa.field("pair_type", pa.string(), nullable=False),  # one of PAIR_TYPES: the strategy that chose the pair
        pa.field("chosen_rollout_id", pa.string(), nullable=False),
        pa.field("rejected_rollout_id", pa.string(), nullable=False),
        pa.field("chosen_n_tokens", pa.int32(), nullable=False),
        pa.field("rejected_n_tokens", pa.int32(), nullable=False),
        pa.field("chosen_correct", pa.bool_()),  # verdict of a rule verifier (gate); null = none decided
        pa.field("rejected_correct", pa.bool_()),
        pa.field("scores_chosen", SCORES, nullable=False),  # named score vector, sorted by name
        pa.field("scores_rejected", SCORES, nullable=False),
        pa.field("label_sources", list_of(pa.string()), nullable=False),  # labeler@version that scored the pair
        pa.field("task", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
    ],
)

# v3: multi-turn pairs (written when the rollouts are trajectories; single-turn rollouts still give v2, byte for
# byte): `chosen` and `rejected` are every message after the prompt, in TRL's format with tool calls (tool-call
# `arguments` a JSON string), and `tools` the JSON schemas of the tools the episodes offered (null: none).
PAIR_V3 = versioned(
    "pair",
    3,
    [
        *(f.with_type(CHAT_MESSAGES) if f.name in ("chosen", "rejected") else f for f in PAIR_V2),
        pa.field("tools", pa.string()),
    ],
)

# Per-aspect pairs (assemble.pairs_by_aspect; data/datasets/pairs_by_aspect/): the pair columns, with
# `score_chosen`, `score_rejected` and `margin` the named aspect's own scores (not the reward) and `aspect` naming it
# ("labeler/aspect", a name of the score vector). `pair_type` is "by_aspect"; `pair_id` hashes the aspect too.
BY_ASPECT = "by_aspect"  # the pair_type of every per-aspect pair
PAIR_ASPECT_V1 = versioned("pair_aspect", 1, [*PAIR_V2, pa.field("aspect", pa.string(), nullable=False)])
