"""Cross-config split check: the per-prompt table over every dataset, and the suite naming the leaked prompts."""

import pyarrow as pa
import pytest

from rewardmill.schemas import LABEL_V1, PAIR_V2, RL_V1
from rewardmill.transforms.validation.runner import describe_failures, validate_folder
from rewardmill.transforms.validation.split_suite import (
    SINGLE_SPLIT,
    SPLIT_CHECK_V1,
    leaked_prompts,
    split_helper_columns,
    split_table,
)
from tests.transforms.validation.conftest import _id, label_row, pair_row, relaxed, rl_row, write_project, write_stage
from tests.transforms.validation.test_suites import IN_SET

SPLIT_CHECK = "split_check_v1"


def prompt(i: int) -> str:
    return _id("prompt", i)


def test_split_table_of_a_clean_project(project):
    table = split_table(project / "datasets")
    assert table.schema == SPLIT_CHECK_V1
    rows = {r["prompt_id"]: (r["splits"], r["datasets"]) for r in table.to_pylist()}
    # prompt 0: pairs, rl, sft and the rewards of rollouts 0-1; prompt 3: rl only
    assert rows[prompt(0)] == (["train"], ["_rewards", "pairs", "rl", "sft"])
    assert rows[prompt(3)] == (["train"], ["rl"])
    assert rows[prompt(2)][0] == ["test"]
    assert table.column("prompt_id").to_pylist() == sorted(rows) and leaked_prompts(table) == []


def test_split_table_names_where_a_prompt_leaks(project):
    datasets = project / "datasets"
    write_stage(datasets / "rl", [rl_row(0, 2, 2, 1, split="test"), rl_row(1, 2, 2, 1)], RL_V1, "assemble")
    table = split_table(datasets)
    (leaked,) = [r for r in table.to_pylist() if r["prompt_id"] == prompt(0)]
    assert leaked == {
        "prompt_id": prompt(0),
        "splits": ["test", "train"],
        "datasets": ["_rewards", "pairs", "rl", "sft"],
    }
    assert leaked_prompts(table) == [prompt(0)]


def test_split_table_skips_folders_without_splits_and_null_values(tmp_path):
    datasets = write_project(tmp_path, configs=False) / "datasets"
    write_stage(datasets / "labels_copy", [label_row(0, "correct", 1.0)], LABEL_V1, "assemble")  # no split column
    write_stage(datasets / "broken", [pair_row(0, prompt_id=None, split="test")], relaxed(PAIR_V2), "assemble")
    assert leaked_prompts(split_table(datasets)) == []  # the null is the pair suite's failure, not a leak


@pytest.mark.parametrize(
    ("splits", "expected"),
    [
        (["train"], True),  # one split
        (["test", "train"], False),  # leaked
        ([], False),  # cannot happen (every row comes from some split), but is not one split
        (None, False),
    ],
)
def test_single_split_helper(splits, expected):
    table = pa.Table.from_pylist(
        [{"prompt_id": "p", "splits": splits, "datasets": []}], schema=relaxed(SPLIT_CHECK_V1)
    )
    assert split_helper_columns(table) == {SINGLE_SPLIT: [expected]}


def test_split_suite_passes_clean_datasets_and_names_every_leaked_prompt(project):
    datasets = project / "datasets"
    report = validate_folder(str(datasets), SPLIT_CHECK, dataset="splits", min_rows=0)
    assert report["success"], describe_failures(report)
    assert report["rows"] == 4  # prompts 0-3

    # 7 leaked prompts: more than a message shows, all in the report
    leaky = [rl_row(i, 2, 2, 1, split="test" if i < 3 else "train") for i in range(10)]  # prompt 2 is a test one
    write_stage(datasets / "rl", leaky, RL_V1, "assemble")
    write_stage(datasets / "rl_test", [rl_row(i, 2, 2, 1, split="test") for i in range(3, 8)], RL_V1, "assemble")
    report = validate_folder(str(datasets), SPLIT_CHECK, dataset="splits", min_rows=0)
    (failed,) = [e for e in report["expectations"] if not e["success"]]
    leaked = sorted([prompt(0), prompt(1), *(prompt(i) for i in range(3, 8))])
    assert (failed["expectation"], failed["column"], failed["unexpected_count"]) == (IN_SET, SINGLE_SPLIT, 7)
    assert sorted(failed["unexpected_ids"]) == leaked
    assert "and 2 more in the report" in describe_failures(report)[0]
