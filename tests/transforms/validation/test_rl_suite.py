"""RL_V1 suite: consistent prompt rows pass; each broken rule fails exactly its expectation on exactly its rows."""

import pyarrow as pa
import pytest

from rewardmill.schemas import RL_V1
from rewardmill.transforms.validation.rl_suite import (
    ALL_PASS_CONSISTENT,
    COUNTS_ORDERED,
    DIFFICULTY_CONSISTENT,
    PASS_RATE_CONSISTENT,
    RL_HELPERS,
    ZERO_PASS_CONSISTENT,
    rl_helper_columns,
    rl_row_checks,
)
from rewardmill.transforms.validation.runner import describe_failures, validate_folder
from tests.transforms.validation.conftest import RL_ROWS, relaxed, rl_row, write_stage
from tests.transforms.validation.test_suites import BETWEEN, IN_SET, NOT_NULL, UNIQUE, expected_ids, unexpected_ids


def validate_rl(directory, rows, schema=RL_V1, min_rows=1) -> dict:
    return validate_folder(str(write_stage(directory, rows, schema)), "rl_v1", dataset="rl", min_rows=min_rows)


@pytest.mark.parametrize(
    ("row", "failing"),
    [
        (rl_row(0, 4, 4, 4), set()),  # 4/4: all_pass, easy
        (rl_row(0, 4, 4, 0), set()),  # 0/4: zero_pass, unsolved
        (rl_row(0, 4, 2, 1), set()),  # two samples unverified: pass rate over the verified ones
        (rl_row(0, 4, 0, 0), set()),  # nothing verified: null pass rate, unverified
        (rl_row(0, 4, 3, 2, difficulty="hard"), set()),  # 2/3 with other thresholds: any rated difficulty
        (rl_row(0, 4, 4, 5, pass_rate=1.25, all_pass=False), {COUNTS_ORDERED}),  # more correct than verified
        (rl_row(0, 2, 4, 4), {COUNTS_ORDERED}),  # more verified than samples
        (rl_row(0, 0, 0, 0), {COUNTS_ORDERED}),  # a prompt without samples
        (rl_row(0, 4, 4, 2, pass_rate=0.25), {PASS_RATE_CONSISTENT}),  # not n_correct / n_verified
        (rl_row(0, 4, 0, 0, pass_rate=0.0), {PASS_RATE_CONSISTENT}),  # nothing verified, yet a pass rate
        (rl_row(0, 4, 4, 0, zero_pass=False), {ZERO_PASS_CONSISTENT}),
        (rl_row(0, 4, 0, 0, zero_pass=True), {ZERO_PASS_CONSISTENT}),  # 0 of 0 verified is no signal, not 0/k
        (rl_row(0, 4, 4, 4, all_pass=False), {ALL_PASS_CONSISTENT}),
        (rl_row(0, 4, 4, 4, difficulty="medium"), {DIFFICULTY_CONSISTENT}),  # k/k is easy whatever the thresholds
        (rl_row(0, 4, 4, 0, difficulty="hard"), {DIFFICULTY_CONSISTENT}),  # 0/k is unsolved
        (rl_row(0, 4, 0, 0, difficulty="unsolved"), {DIFFICULTY_CONSISTENT}),  # nothing verified is unverified
        (rl_row(0, 4, 4, 2, difficulty="unverified"), {DIFFICULTY_CONSISTENT}),
        ({"n_samples": None, "n_verified": 1, "n_correct": 1}, set(RL_HELPERS)),  # a null count: nothing checks
    ],
)
def test_rl_row_checks(row, failing):
    assert {name for name, ok in rl_row_checks(row).items() if not ok} == failing


def test_rl_helper_columns_follow_rows():
    table = pa.Table.from_pylist([RL_ROWS[0], rl_row(1, 2, 2, 0, zero_pass=False)], schema=RL_V1)
    helpers = rl_helper_columns(table)
    assert list(helpers) == list(RL_HELPERS) and helpers[ZERO_PASS_CONSISTENT] == [True, False]


BAD_RL = {
    "duplicate_prompt": (rl_row(10, 2, 2, 1, prompt_id=RL_ROWS[0]["prompt_id"]), {(UNIQUE, "prompt_id")}),
    "pass_rate_mismatch": (rl_row(11, 2, 2, 1, pass_rate=0.75), {(IN_SET, PASS_RATE_CONSISTENT)}),
    "flag_mismatch": (rl_row(12, 2, 2, 0, zero_pass=False), {(IN_SET, ZERO_PASS_CONSISTENT)}),
    "unknown_difficulty": (
        rl_row(13, 2, 2, 1, difficulty="tricky"),
        {(IN_SET, "difficulty"), (IN_SET, DIFFICULTY_CONSISTENT)},
    ),
    "mean_reward_above_one": (rl_row(14, 2, 2, 1, mean_reward=1.5), {(BETWEEN, "mean_reward")}),
    "unknown_split": (rl_row(15, 2, 2, 1, split="dev"), {(IN_SET, "split")}),
    "null_prompt": (rl_row(16, 2, 2, 1, prompt=None), {(NOT_NULL, "prompt")}),
}


@pytest.fixture(scope="module")
def bad_rl_report(tmp_path_factory) -> dict:
    rows = [*RL_ROWS, *(row for row, _ in BAD_RL.values())]
    return validate_rl(tmp_path_factory.mktemp("bad_rl"), rows, schema=relaxed(RL_V1))


def test_valid_rl_rows_pass(tmp_path):
    report = validate_rl(tmp_path, RL_ROWS)
    assert report["success"], describe_failures(report)
    assert report["rows"] == len(RL_ROWS) and report["schema"] == "rl_v1"


def test_bad_rl_rows_fail_exactly_their_expectations(bad_rl_report):
    expected = expected_ids(BAD_RL, "prompt_id")
    assert unexpected_ids(bad_rl_report) == expected
    assert bad_rl_report["statistics"]["unsuccessful"] == len(expected)
