"""ROLLOUT_V2 suite (data/rollouts): the policy's samples as the rollouts stage wrote them."""

from typing import TYPE_CHECKING

from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.validation.expectations import FINISH_REASONS, SPLITS, make_suite, schema_expectations

if TYPE_CHECKING:
    import great_expectations as gx


def build_rollout_suite(min_rows: int = 1) -> "gx.ExpectationSuite":
    """Suite for ROLLOUT_V2 frames: unique rollout_id, known finish_reason and split, non-negative n_tokens."""
    import great_expectations as gx

    e = gx.expectations
    semantic = [
        e.ExpectTableRowCountToBeBetween(min_value=min_rows),
        e.ExpectColumnValuesToBeUnique(column="rollout_id"),
        e.ExpectColumnValuesToBeInSet(column="finish_reason", value_set=list(FINISH_REASONS)),
        e.ExpectColumnValuesToBeInSet(column="split", value_set=list(SPLITS)),
        e.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=0),
        e.ExpectColumnValuesToBeBetween(column="sample_index", min_value=0),
    ]
    return make_suite("rollout_v2", [*schema_expectations(ROLLOUT_V2), *semantic])
