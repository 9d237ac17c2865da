"""ROLLOUT_V2 and ROLLOUT_V3 suites (data/rollouts): the policy's samples as the rollouts stage wrote them."""

from typing import TYPE_CHECKING

import pyarrow as pa

from rewardmill.schemas import ROLLOUT_V2
from rewardmill.schemas.common import schema_id
from rewardmill.schemas.trajectory import STOP_REASONS
from rewardmill.transforms.sampling.reasoning import STATUSES
from rewardmill.transforms.validation.expectations import FINISH_REASONS, SPLITS, make_suite, schema_expectations

if TYPE_CHECKING:
    import great_expectations as gx


def build_rollout_suite(min_rows: int = 1, schema: pa.Schema = ROLLOUT_V2) -> "gx.ExpectationSuite":
    """Suite for ROLLOUT_V2 frames: unique rollout_id, known finish_reason and split, non-negative n_tokens. For
    ROLLOUT_V3 (episodes, reasoning) also a known stop reason and reasoning status (null where off), and
    non-negative reasoning tokens."""
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
    if "turns" in schema.names:
        semantic += [
            e.ExpectColumnValuesToBeInSet(column="stop_reason", value_set=list(STOP_REASONS)),
            e.ExpectColumnValuesToBeInSet(column="reasoning_status", value_set=list(STATUSES)),
            e.ExpectColumnValuesToBeBetween(column="reasoning_tokens", min_value=0),
        ]
    return make_suite(schema_id(schema), [*schema_expectations(schema), *semantic])
