"""RL_V1 suite (data/datasets/rl): one row per prompt whose counts, pass rate and flags agree with each other.

Helper columns (see expectations.py):
    _counts_ordered         0 <= n_correct <= n_verified <= n_samples, n_samples >= 1
    _pass_rate_consistent   pass_rate is null when n_verified == 0, else n_correct / n_verified
    _zero_pass_consistent   zero_pass == (n_verified > 0 and n_correct == 0)
    _all_pass_consistent    all_pass == (n_verified > 0 and n_correct == n_verified)
    _difficulty_consistent  unverified iff n_verified == 0; unsolved iff zero_pass; all_pass is easy; otherwise
                            easy | medium | hard (the easy/hard thresholds are assemble's params, not checked here)
"""

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rewardmill.schemas import RL_V1
from rewardmill.schemas.common import schema_id
from rewardmill.schemas.rl import DIFFICULTIES
from rewardmill.transforms.validation.expectations import (
    SPLITS,
    close,
    column,
    make_suite,
    schema_expectations,
    unit_interval,
)

if TYPE_CHECKING:
    import great_expectations as gx

COUNTS_ORDERED = "_counts_ordered"
PASS_RATE_CONSISTENT = "_pass_rate_consistent"
ZERO_PASS_CONSISTENT = "_zero_pass_consistent"
ALL_PASS_CONSISTENT = "_all_pass_consistent"
DIFFICULTY_CONSISTENT = "_difficulty_consistent"
RL_HELPERS = (COUNTS_ORDERED, PASS_RATE_CONSISTENT, ZERO_PASS_CONSISTENT, ALL_PASS_CONSISTENT, DIFFICULTY_CONSISTENT)
RATED = ("easy", "medium", "hard")  # difficulties of a prompt with some verified samples, some passing


def rl_row_checks(row: dict[str, Any]) -> dict[str, bool]:
    """One RL row (n_samples, n_verified, n_correct, pass_rate, zero_pass, all_pass, difficulty) -> helper values."""
    samples, verified, correct = row.get("n_samples"), row.get("n_verified"), row.get("n_correct")
    if samples is None or verified is None or correct is None:
        return dict.fromkeys(RL_HELPERS, False)
    rate, difficulty = row.get("pass_rate"), row.get("difficulty")
    zero, full = verified > 0 and correct == 0, verified > 0 and correct == verified
    if verified == 0:
        expected_difficulty = difficulty == "unverified"
    elif zero:
        expected_difficulty = difficulty == "unsolved"
    else:
        expected_difficulty = difficulty == "easy" if full else difficulty in RATED
    return {
        COUNTS_ORDERED: 0 <= correct <= verified <= samples and samples >= 1,
        PASS_RATE_CONSISTENT: rate is None if verified == 0 else close(rate, correct / verified),
        ZERO_PASS_CONSISTENT: row.get("zero_pass") is zero,
        ALL_PASS_CONSISTENT: row.get("all_pass") is full,
        DIFFICULTY_CONSISTENT: expected_difficulty,
    }


def rl_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    """RL_V1 table -> the helper columns above (input columns: see rl_row_checks)."""
    names = ("n_samples", "n_verified", "n_correct", "pass_rate", "zero_pass", "all_pass", "difficulty")
    values = {name: column(table, name) for name in names}
    checks = [rl_row_checks({name: values[name][i] for name in names}) for i in range(table.num_rows)]
    return {helper: [c[helper] for c in checks] for helper in RL_HELPERS}


def build_rl_suite(min_rows: int = 1, schema: pa.Schema = RL_V1) -> "gx.ExpectationSuite":
    """Suite for RL_V1 frames that carry the helper columns of `rl_helper_columns`: one row per prompt_id,
    pass_rate and mean_reward in [0, 1] (null = none), known difficulty and split. `schema`: RL_V1, or RL_V2 (with
    the environment; the same rules)."""
    import great_expectations as gx

    e = gx.expectations
    semantic = [
        e.ExpectTableRowCountToBeBetween(min_value=min_rows),
        e.ExpectColumnValuesToBeUnique(column="prompt_id"),
        *unit_interval(("pass_rate", "mean_reward")),
        e.ExpectColumnValuesToBeInSet(column="difficulty", value_set=list(DIFFICULTIES)),
        e.ExpectColumnValuesToBeInSet(column="split", value_set=list(SPLITS)),
    ]
    return make_suite(schema_id(schema), [*schema_expectations(schema, RL_HELPERS), *semantic])
