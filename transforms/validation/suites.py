"""The validation suite of every dataset that crosses a stage boundary, keyed by the schema id its manifest records.

Each suite lives in its own module (`<kind>_suite.py`): a structural part derived from the pyarrow schema plus
semantic checks, some of them as boolean helper columns (expectations.py says how). A SuiteSpec says what
validating one schema needs; the cross-config split check is registered like a schema, with its own loader.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import pyarrow as pa

from rewardmill.schemas import (
    PAIR_ASPECT_V1,
    PAIR_V2,
    PAIR_V3,
    PRM_V1,
    REWARD_V1,
    RL_V1,
    RL_V2,
    ROLLOUT_V2,
    ROLLOUT_V3,
    SFT_V1,
    SFT_V2,
)
from rewardmill.schemas.common import schema_id
from rewardmill.schemas.pair import BY_ASPECT
from rewardmill.transforms.validation.pair_suite import build_pair_suite, pair_helper_columns
from rewardmill.transforms.validation.prm_suite import build_prm_suite, prm_helper_columns
from rewardmill.transforms.validation.reward_suite import build_reward_suite, reward_helper_columns
from rewardmill.transforms.validation.rl_suite import build_rl_suite, rl_helper_columns
from rewardmill.transforms.validation.rollout_suite import build_rollout_suite
from rewardmill.transforms.validation.sft_suite import build_sft_suite, sft_helper_columns
from rewardmill.transforms.validation.split_suite import (
    SPLIT_CHECK_V1,
    build_split_suite,
    split_helper_columns,
    split_table,
)

if TYPE_CHECKING:
    import great_expectations as gx

PARTIAL_UNEXPECTED = 5  # failing values and row ids a report keeps per expectation


def no_helpers(table: pa.Table) -> dict[str, list[bool]]:
    return {}


@dataclass(frozen=True)
class SuiteSpec:
    """What validating one schema needs: the suite builder (takes min_rows), helper columns, the id column, how
    many failing ids a report keeps, and the loader (folder -> table; None = the folder's data shards)."""

    schema: pa.Schema
    id_column: str  # names failing rows in reports
    build: Callable[[int], "gx.ExpectationSuite"]
    helpers: Callable[[pa.Table], dict[str, list[bool]]] = no_helpers
    partial: int = PARTIAL_UNEXPECTED
    load: Callable[[str], pa.Table] | None = None


SPLIT_CHECK = schema_id(SPLIT_CHECK_V1)  # not a manifest schema: validate targets data/datasets with it

SUITES: dict[str, SuiteSpec] = {
    schema_id(PAIR_V2): SuiteSpec(PAIR_V2, "pair_id", build_pair_suite, pair_helper_columns),
    schema_id(PRM_V1): SuiteSpec(PRM_V1, "rollout_id", build_prm_suite, prm_helper_columns),
    schema_id(REWARD_V1): SuiteSpec(REWARD_V1, "rollout_id", build_reward_suite, reward_helper_columns),
    schema_id(RL_V1): SuiteSpec(RL_V1, "prompt_id", build_rl_suite, rl_helper_columns),
    schema_id(ROLLOUT_V2): SuiteSpec(ROLLOUT_V2, "rollout_id", build_rollout_suite),
    schema_id(SFT_V1): SuiteSpec(SFT_V1, "rollout_id", build_sft_suite, sft_helper_columns),
    # the multi-turn versions (outputs of trajectories): the same rules over their columns
    schema_id(PAIR_V3): SuiteSpec(PAIR_V3, "pair_id", partial(build_pair_suite, schema=PAIR_V3), pair_helper_columns),
    # per-aspect pairs: the pair rules on the aspect's own scores; none is no failure (validate.min_pairs is for pairs)
    schema_id(PAIR_ASPECT_V1): SuiteSpec(
        PAIR_ASPECT_V1,
        "pair_id",
        lambda min_rows=0: build_pair_suite(0, PAIR_ASPECT_V1, (BY_ASPECT,)),
        pair_helper_columns,
    ),
    schema_id(RL_V2): SuiteSpec(RL_V2, "prompt_id", partial(build_rl_suite, schema=RL_V2), rl_helper_columns),
    schema_id(SFT_V2): SuiteSpec(SFT_V2, "rollout_id", partial(build_sft_suite, schema=SFT_V2), sft_helper_columns),
    schema_id(ROLLOUT_V3): SuiteSpec(ROLLOUT_V3, "rollout_id", partial(build_rollout_suite, schema=ROLLOUT_V3)),
    # every leaked prompt is worth naming: the report keeps up to 100
    SPLIT_CHECK: SuiteSpec(SPLIT_CHECK_V1, "prompt_id", build_split_suite, split_helper_columns, 100, split_table),
}
