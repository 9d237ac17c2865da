"""PRM_V1 suite (data/datasets/prm): TRL stepwise rows whose labels agree with their first error.

Helper columns (see expectations.py):
    _steps_match                labels and completions are lists of the same length, at least one step
    _soft_labels_match          soft_labels (when not null) has one item per label
    _first_error_valid          first_error_step is -1 or an index into labels
    _labels_match_first_error   labels True before first_error_step, False from it on
"""

from typing import TYPE_CHECKING

import pyarrow as pa

from rewardmill.schemas import PRM_V1
from rewardmill.schemas.step import METHODS, TURNS_METHOD
from rewardmill.transforms.validation.expectations import (
    SPLITS,
    column,
    make_suite,
    schema_expectations,
    unit_interval,
)

if TYPE_CHECKING:
    import great_expectations as gx

PRM_UNIT_INTERVAL = ("min_score", "last_score")  # aggregates of step scores (shares of continuations); null = none

STEPS_MATCH = "_steps_match"
SOFT_LABELS_MATCH = "_soft_labels_match"
FIRST_ERROR_VALID = "_first_error_valid"
LABELS_MATCH_FIRST_ERROR = "_labels_match_first_error"
PRM_HELPERS = (STEPS_MATCH, SOFT_LABELS_MATCH, FIRST_ERROR_VALID, LABELS_MATCH_FIRST_ERROR)


def prm_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """PRM_V1 table -> the helper columns above.

    Input columns: completions, labels, soft_labels, first_error_step, method. One bool per row, False where an input
    the rule needs is null or missing (soft_labels aside: a null or missing one is left to its not-null or
    column-set expectation). Each broken rule fails one helper: labels are compared with the Qwen convention alone
    (label i is True iff first_error_step < 0 or i < first_error_step), so an out-of-range first_error_step fails
    _first_error_valid, not the label check. Rows of method `turns` label each turn on its own (a later turn may
    recover): every label before the first error is True and the one at it False; later ones are free.
    """
    completions, labels, soft = column(table, "completions"), column(table, "labels"), column(table, "soft_labels")
    first_errors, methods = column(table, "first_error_step"), column(table, "method")
    steps_match, soft_match, valid, consistent = [], [], [], []
    for steps, hard, scores, first, method in zip(completions, labels, soft, first_errors, methods, strict=True):
        steps_match.append(steps is not None and hard is not None and len(steps) == len(hard) >= 1)
        soft_match.append(scores is None or (hard is not None and len(scores) == len(hard)))
        valid.append(first is not None and hard is not None and (first == -1 or 0 <= first < len(hard)))
        per_turn = method == TURNS_METHOD
        consistent.append(
            first is not None
            and hard is not None
            and all(
                label == (first < 0 or i < first) for i, label in enumerate(hard) if not (per_turn and 0 <= first < i)
            )
        )
    return {
        STEPS_MATCH: steps_match,
        SOFT_LABELS_MATCH: soft_match,
        FIRST_ERROR_VALID: valid,
        LABELS_MATCH_FIRST_ERROR: consistent,
    }


def build_prm_suite(min_rows: int = 1) -> "gx.ExpectationSuite":
    """Suite for PRM_V1 frames that carry the helper columns of `prm_helper_columns`: at most one row per
    (labeler, rollout), known method and split, min_score and last_score in [0, 1] (nulls pass)."""
    import great_expectations as gx

    e = gx.expectations
    semantic = [
        e.ExpectTableRowCountToBeBetween(min_value=min_rows),
        e.ExpectCompoundColumnsToBeUnique(column_list=["labeler", "rollout_id"]),
        e.ExpectColumnValuesToBeInSet(column="method", value_set=list(METHODS)),
        e.ExpectColumnValuesToBeInSet(column="split", value_set=list(SPLITS)),
        *unit_interval(PRM_UNIT_INTERVAL),
    ]
    return make_suite("prm_v1", [*schema_expectations(PRM_V1, PRM_HELPERS), *semantic])
