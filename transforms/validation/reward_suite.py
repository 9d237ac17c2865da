"""REWARD_V1 suite (data/datasets/_rewards): one aggregated reward per rollout, kept or with its reject reason.

Helper columns (see expectations.py):
    _kept_has_reward      a kept rollout has a reward (a rollout no labeler could score is never kept)
    _verified_by_matches  correct is null exactly when verified_by is (the gate that decided it)
    _scores_sorted        the named score vector has unique, sorted names
"""

from typing import TYPE_CHECKING

import pyarrow as pa

from rewardmill.schemas import REWARD_V1
from rewardmill.transforms.validation.expectations import (
    FINISH_REASONS,
    SPLITS,
    column,
    make_suite,
    schema_expectations,
    scores_sorted,
    unit_interval,
)

if TYPE_CHECKING:
    import great_expectations as gx

KEPT = "kept"  # REWARD_V1 status of a rollout the outputs may use; anything else is a reject reason
KEPT_HAS_REWARD = "_kept_has_reward"
VERIFIED_BY_MATCHES = "_verified_by_matches"
REWARD_SCORES_SORTED = "_scores_sorted"
REWARD_HELPERS = (KEPT_HAS_REWARD, VERIFIED_BY_MATCHES, REWARD_SCORES_SORTED)


def reward_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """REWARD_V1 table -> the helper columns above. Input columns: status, reward, correct, verified_by, scores."""
    statuses, rewards = column(table, "status"), column(table, "reward")
    return {
        KEPT_HAS_REWARD: [
            s is not None and (s != KEPT or r is not None) for s, r in zip(statuses, rewards, strict=True)
        ],
        VERIFIED_BY_MATCHES: [
            (c is None) == (v is None)
            for c, v in zip(column(table, "correct"), column(table, "verified_by"), strict=True)
        ],
        REWARD_SCORES_SORTED: [scores_sorted(s) for s in column(table, "scores")],
    }


def build_reward_suite(min_rows: int = 1) -> "gx.ExpectationSuite":
    """Suite for REWARD_V1 frames that carry the helper columns of `reward_helper_columns`: unique rollout_id,
    reward, model_score, confidence and agreement in [0, 1] (nulls pass), n_tokens >= 0, known split and
    finish_reason."""
    import great_expectations as gx

    e = gx.expectations
    semantic = [
        e.ExpectTableRowCountToBeBetween(min_value=min_rows),
        e.ExpectColumnValuesToBeUnique(column="rollout_id"),
        *unit_interval(("reward", "model_score", "confidence", "agreement")),
        e.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=0),
        e.ExpectColumnValuesToBeInSet(column="finish_reason", value_set=list(FINISH_REASONS)),
        e.ExpectColumnValuesToBeInSet(column="split", value_set=list(SPLITS)),
    ]
    return make_suite("reward_v1", [*schema_expectations(REWARD_V1, REWARD_HELPERS), *semantic])
