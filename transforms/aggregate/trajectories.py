"""The datasets built from trajectories (rollouts an environment ran): which rollout columns they read, and the
messages after the prompt in TRL's conversational format with tool calls (schemas/trajectory.py CHAT_MESSAGE).

Single-turn rollouts never come here: their pairs, SFT and RL rows stay PAIR_V2, SFT_V1 and RL_V1, byte for byte.
"""

from functools import cache

import polars as pl
import pyarrow as pa

from rewardmill.schemas.trajectory import CHAT_MESSAGE, CHAT_MESSAGES

# what the trajectory outputs read beyond SAMPLE_COLUMNS
TRAJECTORY_COLUMNS = ("turns", "tools", "environment", "prompt_messages")


def prompt_as_fed(messages: str, prompt_messages: str) -> pl.Expr:
    """A trajectory dataset's `prompt`: the prompt as the policy was fed it (with the environment's system message),
    else the prompt's messages."""
    return pl.coalesce(pl.col(prompt_messages), pl.col(messages))


CHAT_FIELDS = tuple(f.name for f in CHAT_MESSAGE)


@cache
def chat_dtype() -> pl.DataType:
    """CHAT_MESSAGES as a polars type."""
    frame = pl.from_arrow(pa.table({"m": pa.array([], CHAT_MESSAGES)}))
    assert isinstance(frame, pl.DataFrame)
    return frame.schema["m"]


def chat_messages(turns: str, completion: str) -> pl.Expr:
    """The messages after the prompt: the trajectory's turns without the stage's accounting (n_tokens, finish reason,
    step info); an episode with no turn (its environment raised at reset) is its final answer alone."""
    dtype = chat_dtype()
    from_turns = pl.col(turns).list.eval(pl.struct([pl.element().struct.field(f) for f in CHAT_FIELDS]))
    alone = pl.concat_list(
        pl.struct(
            role=pl.lit("assistant"),
            content=pl.col(completion),
            reasoning=pl.lit(None, dtype=pl.String),
            tool_calls=pl.lit(None, dtype=_field(dtype, "tool_calls")),
            tool_call_id=pl.lit(None, dtype=pl.String),
            name=pl.lit(None, dtype=pl.String),
        )
    )
    has_turns = pl.col(turns).list.len().fill_null(0) > 0
    return pl.when(has_turns).then(from_turns.cast(dtype)).otherwise(alone.cast(dtype))


def _field(messages: pl.DataType, name: str) -> pl.DataType:
    """The type of field `name` of a list-of-struct type's items."""
    return next(f.dtype for f in messages.inner.fields if f.name == name)  # type: ignore[attr-defined]
