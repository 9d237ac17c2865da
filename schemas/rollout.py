"""rollout: one sampled completion of the policy for one prompt (data/rollouts/).

Prompt fields are carried along so labelers read one table and need no join.
"""

import pyarrow as pa

from rewardmill.schemas.common import MESSAGES, list_of, versioned
from rewardmill.schemas.prompt import RUBRIC_CRITERION
from rewardmill.schemas.trajectory import ENVIRONMENT, TURNS

POLICY = pa.struct(
    [pa.field("name", pa.string()), pa.field("fingerprint", pa.string()), pa.field("backend", pa.string())]
)

# v2: the prompt's `rubric` is carried too (rubric judges read it).
ROLLOUT_V2 = versioned(
    "rollout",
    2,
    [
        pa.field("rollout_id", pa.string(), nullable=False),  # hash(prompt, fingerprint, sampling, index, seed)
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field("messages", MESSAGES, nullable=False),
        pa.field("reference", pa.string()),
        pa.field("tests", pa.string()),  # code tests (JSON), copied from the prompt
        pa.field("constraints", pa.string()),  # instruction ids + kwargs (JSON), copied from the prompt
        pa.field("rubric", list_of(RUBRIC_CRITERION)),  # criteria + weights, copied from the prompt
        pa.field("split", pa.string(), nullable=False),
        pa.field("sample_index", pa.int32(), nullable=False),
        pa.field("completion", pa.string(), nullable=False),
        pa.field("n_tokens", pa.int32(), nullable=False),
        pa.field("finish_reason", pa.string(), nullable=False),  # stop | length
        pa.field("logprob_sum", pa.float64()),  # sum of token logprobs under the raw (untempered) policy
        pa.field("policy", POLICY, nullable=False),
        pa.field("sampling", pa.string(), nullable=False),  # sampling params, canonical JSON
        pa.field("seed", pa.int64(), nullable=False),  # the per-rollout seed actually used
    ],
)

# v3: multi-turn trajectories and reasoning (written when `rollouts.environment` or `rollouts.reasoning` is set;
# without either the stage writes v2, byte for byte as before). `completion` stays the final assistant answer, so
# every single-turn labeler reads it unchanged; `n_tokens`, `finish_reason` and `logprob_sum` are over all assistant
# turns (finish: the last turn's). `reasoning_status` and `reasoning_tokens`, and the turns' token ids and logprobs
# (rollouts.keep_tokens), and `prompt_messages`, were added before v3 was released.
ROLLOUT_V3 = versioned(
    "rollout",
    3,
    [
        *ROLLOUT_V2,
        pa.field("reasoning", pa.string()),  # the final answer's reasoning trace, apart from `completion`
        # with rollouts.reasoning: none | closed | unclosed (cut before its answer) | no_answer; None when it is off
        pa.field("reasoning_status", pa.string()),
        pa.field("reasoning_tokens", pa.int32()),  # tokens of all assistant turns' reasoning (None: not counted)
        pa.field("turns", TURNS),  # every message after the prompt, the final answer included
        pa.field("tools", pa.string()),  # JSON schemas of the tools offered (TRL's `tools` column), or None
        pa.field("environment", ENVIRONMENT),  # name, version and config of the environment that ran the episode
        pa.field("stop_reason", pa.string()),  # done | max_turns | max_tokens | error
        pa.field("env_reward", pa.float64()),  # the environment's own outcome reward, None when it gives none
        pa.field("env_info", pa.string()),  # the environment's last step info (JSON)
        # the prompt as the policy was fed it, when the environment added a system message (the text protocol's tool
        # instructions), merged as every turn had it; None: `messages` as they are. Pairs and SFT rows use it as
        # `prompt`, so a trainer sees the instructions the sampled turns followed
        pa.field("prompt_messages", MESSAGES),
    ],
)
