"""sft: the best verified rollouts of a prompt, for rejection-sampling fine-tuning (data/datasets/sft/).

`prompt` and `completion` are TRL's conversational prompt-completion format (SFTTrainer loads them as is).
"""

import pyarrow as pa

from rewardmill.schemas.common import MESSAGES, list_of, versioned
from rewardmill.schemas.pair import SCORES
from rewardmill.schemas.trajectory import CHAT_MESSAGES

SFT_V1 = versioned(
    "sft",
    1,
    [
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("prompt", MESSAGES, nullable=False),
        pa.field("completion", MESSAGES, nullable=False),  # the assistant turn
        pa.field("reward", pa.float64(), nullable=False),  # aggregated reward in [0, 1]
        pa.field("confidence", pa.float64(), nullable=False),
        pa.field("correct", pa.bool_()),  # a rule verifier's verdict; null = none decided
        pa.field("rank", pa.int32(), nullable=False),  # 0 = the prompt's best rollout
        pa.field("n_tokens", pa.int32(), nullable=False),
        pa.field("scores", SCORES, nullable=False),  # named score vector, sorted by name
        pa.field("label_sources", list_of(pa.string()), nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
    ],
)

# v2: multi-turn SFT rows (trajectories; single-turn rollouts still give v1): `completion` is every message after the
# prompt, tool calls and tool results included, and `tools` the tools' JSON schemas, which SFTTrainer passes to the
# chat template.
SFT_V2 = versioned(
    "sft",
    2,
    [*(f.with_type(CHAT_MESSAGES) if f.name == "completion" else f for f in SFT_V1), pa.field("tools", pa.string())],
)
