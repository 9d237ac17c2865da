"""PAIR_V2 suite (data/datasets/pairs): schema part plus the rules a preference pair must keep.

Helper columns (see expectations.py):
    _chosen_differs         chosen and rejected completions are both present and not equal
    _rollouts_differ        chosen_rollout_id and rejected_rollout_id are both present and not equal
    _margin_consistent      |margin - (score_chosen - score_rejected)| <= TOLERANCE
    _pair_type_consistent   a correct_vs_incorrect pair has chosen_correct True and rejected_correct False (other
                            types: any verdicts)
    _scores_sorted          scores_chosen and scores_rejected have unique, sorted names
"""

from typing import TYPE_CHECKING

import pyarrow as pa

from rewardmill.schemas import PAIR_V2
from rewardmill.schemas.common import schema_id
from rewardmill.schemas.pair import PAIR_TYPES
from rewardmill.transforms.validation.expectations import (
    SPLITS,
    close,
    column,
    make_suite,
    schema_expectations,
    scores_sorted,
    unit_interval,
)

if TYPE_CHECKING:
    import great_expectations as gx

PAIR_UNIT_INTERVAL = ("score_chosen", "score_rejected", "confidence", "agreement")  # aggregated rewards are in [0, 1]

CHOSEN_DIFFERS = "_chosen_differs"
ROLLOUTS_DIFFER = "_rollouts_differ"
MARGIN_CONSISTENT = "_margin_consistent"
PAIR_TYPE_CONSISTENT = "_pair_type_consistent"
PAIR_SCORES_SORTED = "_scores_sorted"
PAIR_HELPERS = (CHOSEN_DIFFERS, ROLLOUTS_DIFFER, MARGIN_CONSISTENT, PAIR_TYPE_CONSISTENT, PAIR_SCORES_SORTED)


def differ(a: object, b: object) -> bool:
    return a is not None and b is not None and a != b


def pair_type_consistent(pair_type: str | None, chosen_correct: bool | None, rejected_correct: bool | None) -> bool:
    if pair_type is None:
        return False
    return pair_type != "correct_vs_incorrect" or (chosen_correct is True and rejected_correct is False)


def pair_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """PAIR_V2 table -> the helper columns above, one bool per row.

    Input columns: chosen, rejected, chosen_rollout_id, rejected_rollout_id, margin, score_chosen, score_rejected,
    pair_type, chosen_correct, rejected_correct, scores_chosen, scores_rejected.
    """
    margin, high, low = column(table, "margin"), column(table, "score_chosen"), column(table, "score_rejected")
    verdicts = zip(
        column(table, "pair_type"), column(table, "chosen_correct"), column(table, "rejected_correct"), strict=True
    )
    scores = zip(column(table, "scores_chosen"), column(table, "scores_rejected"), strict=True)
    return {
        CHOSEN_DIFFERS: [
            differ(c, r) for c, r in zip(column(table, "chosen"), column(table, "rejected"), strict=True)
        ],
        ROLLOUTS_DIFFER: [
            differ(c, r)
            for c, r in zip(column(table, "chosen_rollout_id"), column(table, "rejected_rollout_id"), strict=True)
        ],
        MARGIN_CONSISTENT: [
            m is not None and h is not None and lo is not None and close(m, h - lo)
            for m, h, lo in zip(margin, high, low, strict=True)
        ],
        PAIR_TYPE_CONSISTENT: [pair_type_consistent(*v) for v in verdicts],
        PAIR_SCORES_SORTED: [scores_sorted(c) and scores_sorted(r) for c, r in scores],
    }


def build_pair_suite(
    min_rows: int = 1, schema: pa.Schema = PAIR_V2, pair_types: tuple[str, ...] = PAIR_TYPES
) -> "gx.ExpectationSuite":
    """Suite for PAIR_V2 frames that carry the helper columns of `pair_helper_columns`: unique pair_id, scores in
    [0, 1], margin > 0, a known pair_type and split, a non-empty chosen side; fewer than `min_rows` pairs fail
    (params `validate.min_pairs`). `schema`: PAIR_V2, or PAIR_V3 (multi-turn sides; the same rules), or
    PAIR_ASPECT_V1 (per-aspect pairs, `pair_types` ("by_aspect",))."""
    import great_expectations as gx

    e = gx.expectations
    semantic = [
        e.ExpectTableRowCountToBeBetween(min_value=min_rows),
        e.ExpectColumnValuesToBeUnique(column="pair_id"),
        *unit_interval(PAIR_UNIT_INTERVAL),
        e.ExpectColumnValuesToBeBetween(column="margin", min_value=0.0, strict_min=True),
        e.ExpectColumnValuesToBeInSet(column="pair_type", value_set=list(pair_types)),
        e.ExpectColumnValuesToBeInSet(column="split", value_set=list(SPLITS)),
        e.ExpectColumnValuesToBeBetween(column="chosen_n_tokens", min_value=1),
        e.ExpectColumnValuesToBeBetween(column="rejected_n_tokens", min_value=0),
    ]
    return make_suite(schema_id(schema), [*schema_expectations(schema, PAIR_HELPERS), *semantic])
