"""trajectory: the messages of a multi-turn episode after the prompt, in TRL's conversational format with tool calls.

A turn is one message: the policy's (`assistant`, with optional `reasoning` and `tool_calls`), a tool's result
(`tool`, with the `tool_call_id` it answers and the tool's `name`), or the environment's feedback (`user`). The
stage's accounting rides along: per assistant turn its tokens and finish reason, per turn the environment's step
info (JSON), and with `rollouts.keep_tokens` its exact token ids and logprobs. TRL reads `role`, `content` and
`tool_calls` (and `tool_call_id`/`name` on tool messages); the other columns are ours. Tool-call `arguments` are a
JSON string, as the OpenAI wire format has them.
"""

import pyarrow as pa

from rewardmill.schemas.common import list_of

TOOL_CALL = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("type", pa.string()),  # "function"
        pa.field("function", pa.struct([pa.field("name", pa.string()), pa.field("arguments", pa.string())])),
    ]
)

TURN = pa.struct(
    [
        pa.field("role", pa.string(), nullable=False),  # assistant | tool | user
        pa.field("content", pa.string()),  # None: an assistant turn of tool calls only
        pa.field("reasoning", pa.string()),  # the assistant's reasoning trace, apart from its answer
        pa.field("tool_calls", list_of(TOOL_CALL)),
        pa.field("tool_call_id", pa.string()),  # a tool message: the call it answers
        pa.field("name", pa.string()),  # a tool message: the tool's name
        pa.field("n_tokens", pa.int32()),  # an assistant turn: tokens sampled
        pa.field("finish_reason", pa.string()),  # an assistant turn: stop | length
        pa.field("info", pa.string()),  # the environment's step info (JSON), on the assistant turn it answers
        # an assistant turn with rollouts.keep_tokens (else None): the token ids the policy was fed for this turn
        # (the whole formatted conversation), the ids it drew, and each drawn token's raw (untempered) logprob
        pa.field("prompt_token_ids", list_of(pa.int32())),
        pa.field("token_ids", list_of(pa.int32())),
        pa.field("token_logprobs", list_of(pa.float64())),
    ]
)
TURNS = list_of(TURN)

# the text protocol's tool-call tags (transforms/environments/tool_calls.py), which a turn's content keeps
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"

# why an episode ended: the environment ended it, that many assistant turns, the assistant tokens' budget, or the
# environment raised (transforms/environments/episodes.py)
STOP_REASONS = ("done", "max_turns", "max_tokens", "error")

ENVIRONMENT = pa.struct(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("version", pa.string(), nullable=False),
        pa.field("config", pa.string(), nullable=False),  # canonical JSON
    ]
)

# A message as TRL's trainers read it (the conversational format with tool calls): a TURN without the stage's
# accounting. The chosen/rejected sides of multi-turn pairs and the completion of multi-turn SFT rows.
CHAT_MESSAGE = pa.struct(
    [
        pa.field("role", pa.string(), nullable=False),
        pa.field("content", pa.string()),  # None: an assistant turn of tool calls only
        # the turn's reasoning trace (rollouts.reasoning), kept apart from `content`; chat templates read it under
        # their own key (`reasoning_content`, `thinking`) or not at all: rename it for a template that trains on it
        pa.field("reasoning", pa.string()),
        pa.field("tool_calls", list_of(TOOL_CALL)),
        pa.field("tool_call_id", pa.string()),
        pa.field("name", pa.string()),
    ]
)
CHAT_MESSAGES = list_of(CHAT_MESSAGE)
