"""SFT_V1 suite (data/datasets/sft): the best verified rollouts of each prompt, with a real assistant turn.

Helper columns (see expectations.py):
    _completion_present   completion has at least one message, each from the assistant with non-blank content
    _scores_sorted        the named score vector has unique, sorted names
"""

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rewardmill.schemas import SFT_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.validation.expectations import (
    SPLITS,
    column,
    make_suite,
    schema_expectations,
    scores_sorted,
    unit_interval,
)

if TYPE_CHECKING:
    import great_expectations as gx

COMPLETION_PRESENT = "_completion_present"
SFT_SCORES_SORTED = "_scores_sorted"
SFT_HELPERS = (COMPLETION_PRESENT, SFT_SCORES_SORTED)


def completion_present(messages: list[dict[str, Any]] | None, multi_turn: bool = False) -> bool:
    """A single-turn completion (SFT_V1): assistant messages, each with non-blank content. A multi-turn one (SFT_V2:
    tool calls, tool results, feedback): known roles, every assistant message with content or tool calls, every tool
    message answering a call, and a final assistant answer with non-blank content."""
    if not messages:
        return False
    if not multi_turn:
        return all(m.get("role") == "assistant" and _text(m) for m in messages)
    final = messages[-1]
    return (
        all(_well_formed(m) for m in messages)
        and final.get("role") == "assistant"
        and _text(final)
        and not final.get("tool_calls")
    )


def _text(message: dict[str, Any]) -> bool:
    return isinstance(message.get("content"), str) and bool(message["content"].strip())


def _well_formed(message: dict[str, Any]) -> bool:
    role = message.get("role")
    if role == "assistant":
        return _text(message) or bool(message.get("tool_calls"))
    if role == "tool":
        return bool(message.get("tool_call_id")) and isinstance(message.get("content"), str)
    return role == "user" and isinstance(message.get("content"), str)


def sft_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """SFT_V1 or SFT_V2 table (its `tools` column tells them apart) -> the helper columns above. Input columns:
    completion, scores."""
    multi_turn = "tools" in table.column_names
    return {
        COMPLETION_PRESENT: [completion_present(m, multi_turn) for m in column(table, "completion")],
        SFT_SCORES_SORTED: [scores_sorted(s) for s in column(table, "scores")],
    }


def build_sft_suite(min_rows: int = 1, schema: pa.Schema = SFT_V1) -> "gx.ExpectationSuite":
    """Suite for SFT_V1 frames that carry the helper columns of `sft_helper_columns`: unique rollout_id, one row
    per (prompt, rank), reward and confidence in [0, 1], rank >= 0, n_tokens > 0, known split. `schema`: SFT_V1, or
    SFT_V2 (multi-turn completions with their tools; the same rules)."""
    import great_expectations as gx

    e = gx.expectations
    semantic = [
        e.ExpectTableRowCountToBeBetween(min_value=min_rows),
        e.ExpectColumnValuesToBeUnique(column="rollout_id"),
        e.ExpectCompoundColumnsToBeUnique(column_list=["prompt_id", "rank"]),
        *unit_interval(("reward", "confidence")),
        e.ExpectColumnValuesToBeBetween(column="rank", min_value=0),
        e.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=1),
        e.ExpectColumnValuesToBeInSet(column="split", value_set=list(SPLITS)),
    ]
    return make_suite(schema_id(schema), [*schema_expectations(schema, SFT_HELPERS), *semantic])
