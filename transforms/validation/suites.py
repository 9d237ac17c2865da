"""Great Expectations suites for the datasets that cross a stage boundary, derived from their pyarrow schemas.

Every suite has a structural part built from the schema (the column set matches exactly, non-nullable fields have
no nulls, each column has the pandas type its arrow type converts to) plus semantic checks on the values.
Checks that span several columns or nested values (chosen != rejected, margin == score difference, PRM labels
against first_error_step) are computed here as boolean helper columns, added to the frame before validation and
expected to be all True, so the report still names one expectation per rule.

Great Expectations takes seconds to import, so it is imported inside the builders, not at module import.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from rewardmill.schemas import PAIR_V1, PRM_V1, ROLLOUT_V2
from rewardmill.schemas.common import schema_id
from rewardmill.schemas.step import METHODS

if TYPE_CHECKING:
    import great_expectations as gx

MARGIN_TOLERANCE = 1e-9  # margin is written as score_chosen - score_rejected; allow float noise only
SPLITS = ("train", "test")
FINISH_REASONS = ("stop", "length")
PAIR_UNIT_INTERVAL = ("score_chosen", "score_rejected", "confidence", "agreement")  # scores are in [0, 1] for now
PRM_UNIT_INTERVAL = ("min_score", "last_score")  # aggregates of step scores (shares of continuations); null = none

# Helper columns (prefixed so they never collide with a schema column).
CHOSEN_DIFFERS = "_chosen_differs"  # chosen and rejected completions are both present and not equal
MARGIN_CONSISTENT = "_margin_consistent"  # |margin - (score_chosen - score_rejected)| <= MARGIN_TOLERANCE
STEPS_MATCH = "_steps_match"  # labels and completions are lists of the same length, at least one step
SOFT_LABELS_MATCH = "_soft_labels_match"  # soft_labels (when not null) has one item per label
FIRST_ERROR_VALID = "_first_error_valid"  # first_error_step is -1 or an index into labels
LABELS_MATCH_FIRST_ERROR = "_labels_match_first_error"  # labels True before first_error_step, False from it on
PRM_HELPERS = (STEPS_MATCH, SOFT_LABELS_MATCH, FIRST_ERROR_VALID, LABELS_MATCH_FIRST_ERROR)


def pandas_type(arrow_type: pa.DataType) -> str:
    """The type name ExpectColumnValuesToBeOfType sees after `Table.to_pandas()` (nested values as Python lists)."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "str"  # pandas >= 3 default string dtype
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return "list"
    if pa.types.is_struct(arrow_type):
        return "dict"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return np.dtype(arrow_type.to_pandas_dtype()).name  # int32, int64, float64, ...
    raise TypeError(f"no pandas type mapping for arrow type {arrow_type}")


def schema_expectations(schema: pa.Schema, helper_columns: tuple[str, ...] = ()) -> list:
    """Column set (schema + helpers, exact), non-null for non-nullable fields, and one type check per column."""
    import great_expectations as gx

    e = gx.expectations
    columns = [*schema.names, *helper_columns]
    expectations: list = [e.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True)]
    for field in schema:
        if not field.nullable:
            expectations.append(e.ExpectColumnValuesToNotBeNull(column=field.name))
        expectations.append(e.ExpectColumnValuesToBeOfType(column=field.name, type_=pandas_type(field.type)))
    for column in helper_columns:
        # Helpers are never null (False when an input is missing), and must all be True.
        expectations.append(e.ExpectColumnValuesToBeInSet(column=column, value_set=[True]))
    return expectations


def _suite(name: str, expectations: list) -> "gx.ExpectationSuite":
    import great_expectations as gx

    # Passing expectations to the constructor needs no data context (add_expectation would try to save).
    return gx.ExpectationSuite(name=name, expectations=expectations)


def pair_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """PAIR_V1 table -> {_chosen_differs, _margin_consistent}: one bool per row, False where an input is null.

    Input columns: chosen, rejected, margin, score_chosen, score_rejected (a missing column gives all False; the
    column-set expectation reports the missing column itself).
    """

    def column(name: str) -> list[Any]:
        return table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows

    chosen, rejected = column("chosen"), column("rejected")
    margin, high, low = column("margin"), column("score_chosen"), column("score_rejected")
    differs = [c is not None and r is not None and c != r for c, r in zip(chosen, rejected, strict=True)]
    consistent = [
        m is not None and h is not None and lo is not None and abs(m - (h - lo)) <= MARGIN_TOLERANCE
        for m, h, lo in zip(margin, high, low, strict=True)
    ]
    return {CHOSEN_DIFFERS: differs, MARGIN_CONSISTENT: consistent}


def build_pair_suite(min_rows: int = 1) -> "gx.ExpectationSuite":
    """Suite for PAIR_V1 frames that carry the helper columns of `pair_helper_columns`.

    Fails when there are fewer than `min_rows` pairs (params `validate.min_pairs`).
    """
    import great_expectations as gx

    e = gx.expectations
    semantic = [
        e.ExpectTableRowCountToBeBetween(min_value=min_rows),
        e.ExpectColumnValuesToBeUnique(column="pair_id"),
        *(e.ExpectColumnValuesToBeBetween(column=c, min_value=0.0, max_value=1.0) for c in PAIR_UNIT_INTERVAL),
        e.ExpectColumnValuesToBeBetween(column="margin", min_value=0.0, strict_min=True),
        e.ExpectColumnValuesToBeInSet(column="split", value_set=list(SPLITS)),
        e.ExpectColumnValuesToBeBetween(column="chosen_n_tokens", min_value=0),
        e.ExpectColumnValuesToBeBetween(column="rejected_n_tokens", min_value=0),
    ]
    return _suite("pair_v1", [*schema_expectations(PAIR_V1, (CHOSEN_DIFFERS, MARGIN_CONSISTENT)), *semantic])


def prm_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """PRM_V1 table -> {_steps_match, _soft_labels_match, _first_error_valid, _labels_match_first_error}.

    Input columns: completions, labels, soft_labels, first_error_step. One bool per row, False where an input the
    rule needs is null or missing (soft_labels aside: a null or missing one is left to its not-null or column-set
    expectation). Each broken rule fails one helper: labels are compared with the Qwen convention alone (label i
    is True iff first_error_step < 0 or i < first_error_step), so an out-of-range first_error_step fails
    _first_error_valid, not the label check.
    """

    def column(name: str) -> list[Any]:
        return table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows

    completions, labels, soft = column("completions"), column("labels"), column("soft_labels")
    first_errors = column("first_error_step")
    steps_match, soft_match, valid, consistent = [], [], [], []
    for steps, hard, scores, first in zip(completions, labels, soft, first_errors, strict=True):
        steps_match.append(steps is not None and hard is not None and len(steps) == len(hard) >= 1)
        soft_match.append(scores is None or (hard is not None and len(scores) == len(hard)))
        valid.append(first is not None and hard is not None and (first == -1 or 0 <= first < len(hard)))
        consistent.append(
            first is not None
            and hard is not None
            and all(label == (first < 0 or i < first) for i, label in enumerate(hard))
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
        *(e.ExpectColumnValuesToBeBetween(column=c, min_value=0.0, max_value=1.0) for c in PRM_UNIT_INTERVAL),
    ]
    return _suite("prm_v1", [*schema_expectations(PRM_V1, PRM_HELPERS), *semantic])


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
    return _suite("rollout_v2", [*schema_expectations(ROLLOUT_V2), *semantic])


def no_helpers(table: pa.Table) -> dict[str, list[bool]]:
    return {}


@dataclass(frozen=True)
class SuiteSpec:
    """What validating one schema needs: the suite builder (takes min_rows), helper columns, and the id column."""

    schema: pa.Schema
    id_column: str  # names failing rows in reports
    build: Callable[[int], "gx.ExpectationSuite"]
    helpers: Callable[[pa.Table], dict[str, list[bool]]]


# Keyed by the schema id stage manifests record (`_manifest.json` "schema").
SUITES: dict[str, SuiteSpec] = {
    schema_id(PAIR_V1): SuiteSpec(PAIR_V1, "pair_id", build_pair_suite, pair_helper_columns),
    schema_id(PRM_V1): SuiteSpec(PRM_V1, "rollout_id", build_prm_suite, prm_helper_columns),
    schema_id(ROLLOUT_V2): SuiteSpec(ROLLOUT_V2, "rollout_id", build_rollout_suite, no_helpers),
}
