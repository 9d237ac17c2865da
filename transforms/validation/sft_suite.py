"""SFT_V1 suite (data/datasets/sft): the best verified rollouts of each prompt, with a real assistant turn.

Helper columns (see expectations.py):
    _completion_present   completion has at least one message, each from the assistant with non-blank content
    _scores_sorted        the named score vector has unique, sorted names
"""

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rewardmill.schemas import SFT_V1
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


def completion_present(messages: list[dict[str, Any]] | None) -> bool:
    return bool(messages) and all(
        m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"].strip() for m in messages
    )


def sft_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """SFT_V1 table -> the helper columns above. Input columns: completion, scores."""
    return {
        COMPLETION_PRESENT: [completion_present(m) for m in column(table, "completion")],
        SFT_SCORES_SORTED: [scores_sorted(s) for s in column(table, "scores")],
    }


def build_sft_suite(min_rows: int = 1) -> "gx.ExpectationSuite":
    """Suite for SFT_V1 frames that carry the helper columns of `sft_helper_columns`: unique rollout_id, one row
    per (prompt, rank), reward and confidence in [0, 1], rank >= 0, n_tokens > 0, known split."""
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
    return make_suite("sft_v1", [*schema_expectations(SFT_V1, SFT_HELPERS), *semantic])
