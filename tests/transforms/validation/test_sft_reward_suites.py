"""SFT_V1 and REWARD_V1 suites: valid rows pass; each broken rule fails exactly its expectation on exactly its rows."""

import pyarrow as pa
import pytest

from rewardmill.schemas import REWARD_V1, SFT_V1
from rewardmill.transforms.validation.reward_suite import (
    KEPT_HAS_REWARD,
    REWARD_SCORES_SORTED,
    VERIFIED_BY_MATCHES,
    reward_helper_columns,
)
from rewardmill.transforms.validation.runner import describe_failures, validate_folder
from rewardmill.transforms.validation.sft_suite import COMPLETION_PRESENT, SFT_SCORES_SORTED, completion_present
from tests.transforms.validation.conftest import (
    REWARDS,
    SFT_ROWS,
    answer,
    relaxed,
    reward_row,
    scores,
    sft_row,
    write_stage,
)
from tests.transforms.validation.test_suites import BETWEEN, IN_SET, NOT_NULL, UNIQUE, expected_ids, unexpected_ids

COMPOUND_UNIQUE = "expect_compound_columns_to_be_unique"


def validate(directory, rows, schema, schema_id, min_rows=1) -> dict:
    return validate_folder(str(write_stage(directory, rows, schema)), schema_id, dataset="x", min_rows=min_rows)


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (answer("5"), True),
        ([], False),  # no turn at all
        (None, False),
        (answer("  \n"), False),  # a blank answer teaches nothing
        ([{"role": "user", "content": "5"}], False),  # not the assistant's turn
        ([*answer("5"), *answer("")], False),  # an empty second turn
    ],
)
def test_completion_present(messages, expected):
    assert completion_present(messages) is expected


@pytest.mark.parametrize(
    ("row", "failing"),
    [
        (REWARDS[0], set()),  # kept, verified
        (REWARDS[3], set()),  # no reward, but not kept (missing_score)
        (reward_row(0, None, None, 10), {KEPT_HAS_REWARD}),  # kept without a reward
        (reward_row(0, 0.5, None, 10, verified_by="math_answer"), {VERIFIED_BY_MATCHES}),  # a gate but no verdict
        (reward_row(0, 1.0, True, 10, verified_by=None), {VERIFIED_BY_MATCHES}),  # a verdict from nowhere
        (reward_row(0, 1.0, True, 10, scores=scores(1.0, 0.5)[::-1]), {REWARD_SCORES_SORTED}),
        (reward_row(0, 1.0, True, 10, status=None), {KEPT_HAS_REWARD}),  # no status: cannot tell
    ],
)
def test_reward_helper_columns(row, failing):
    helpers = reward_helper_columns(pa.Table.from_pylist([row], schema=relaxed(REWARD_V1)))
    assert {name for name, values in helpers.items() if not values[0]} == failing


BAD_SFT = {
    "duplicate_rollout": (sft_row(10, rollout_id=SFT_ROWS[0]["rollout_id"]), {(UNIQUE, "rollout_id")}),
    # a second rank-0 row of prompt 0 (the first is in SFT_ROWS)
    "duplicate_rank": (sft_row(11, prompt_id=SFT_ROWS[0]["prompt_id"]), {(COMPOUND_UNIQUE, None)}),
    "reward_above_one": (sft_row(12, reward=1.5), {(BETWEEN, "reward")}),
    "negative_rank": (sft_row(13, rank=-1), {(BETWEEN, "rank")}),
    "empty_completion": (
        sft_row(14, completion=answer(""), n_tokens=0),
        {(IN_SET, COMPLETION_PRESENT), (BETWEEN, "n_tokens")},
    ),
    "unsorted_scores": (sft_row(15, scores=scores(1.0, 0.5)[::-1]), {(IN_SET, SFT_SCORES_SORTED)}),
    "null_confidence": (sft_row(16, confidence=None), {(NOT_NULL, "confidence")}),
}


def test_sft_suite(tmp_path):
    report = validate(tmp_path / "good", SFT_ROWS, SFT_V1, "sft_v1")
    assert report["success"], describe_failures(report)
    rows = [*SFT_ROWS, *(row for row, _ in BAD_SFT.values())]
    report = validate(tmp_path / "bad", rows, relaxed(SFT_V1), "sft_v1")
    expected = expected_ids(BAD_SFT, "rollout_id")
    expected[(UNIQUE, "rollout_id")].add(SFT_ROWS[0]["rollout_id"])  # the original of the duplicate
    expected[(COMPOUND_UNIQUE, None)].add(SFT_ROWS[0]["rollout_id"])
    assert unexpected_ids(report) == expected


BAD_REWARDS = {
    "duplicate_rollout": (reward_row(10, 0.5, None, 5, rollout_id=REWARDS[0]["rollout_id"]), {(UNIQUE, "rollout_id")}),
    "kept_without_reward": (reward_row(11, None, None, 5), {(IN_SET, KEPT_HAS_REWARD)}),
    "reward_below_zero": (reward_row(12, -0.5, None, 5), {(BETWEEN, "reward")}),
    "agreement_above_one": (reward_row(13, 0.5, None, 5, agreement=1.5), {(BETWEEN, "agreement")}),
    "negative_n_tokens": (reward_row(14, 0.5, None, -1), {(BETWEEN, "n_tokens")}),
    "unknown_finish_reason": (reward_row(15, 0.5, None, 5, finish_reason="eos"), {(IN_SET, "finish_reason")}),
    "null_status": (reward_row(16, 0.5, None, 5, status=None), {(NOT_NULL, "status"), (IN_SET, KEPT_HAS_REWARD)}),
}


def test_reward_suite(tmp_path):
    report = validate(tmp_path / "good", REWARDS, REWARD_V1, "reward_v1", min_rows=0)
    assert report["success"], describe_failures(report)
    rows = [*REWARDS, *(row for row, _ in BAD_REWARDS.values())]
    report = validate(tmp_path / "bad", rows, relaxed(REWARD_V1), "reward_v1")
    expected = expected_ids(BAD_REWARDS, "rollout_id")
    expected[(UNIQUE, "rollout_id")].add(REWARDS[0]["rollout_id"])
    assert unexpected_ids(report) == expected
