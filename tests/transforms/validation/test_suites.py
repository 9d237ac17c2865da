"""Pair and rollout suites: the schema-derived part, helper columns, and each rule failing on exactly its rows.

A Great Expectations run costs about a second whatever the data size, so the bad rows of each suite are validated
together: every bad row must fail exactly its expectations, and every failing expectation must name exactly the rows
expected to fail it (the valid rows are never flagged).
"""

import json

import numpy as np
import pyarrow as pa
import pytest

from rewardmill.schemas import PAIR_V2, ROLLOUT_V2
from rewardmill.transforms.validation.expectations import pandas_type, scores_sorted
from rewardmill.transforms.validation.pair_suite import (
    CHOSEN_DIFFERS,
    MARGIN_CONSISTENT,
    PAIR_HELPERS,
    PAIR_SCORES_SORTED,
    PAIR_TYPE_CONSISTENT,
    ROLLOUTS_DIFFER,
    build_pair_suite,
    pair_helper_columns,
)
from rewardmill.transforms.validation.runner import describe_failures, plain, shown, validate_folder
from rewardmill.transforms.validation.suites import SUITES
from tests.transforms.validation.conftest import PAIRS, pair_row, relaxed, rollout_row, scores, write_stage

BETWEEN, IN_SET = "expect_column_values_to_be_between", "expect_column_values_to_be_in_set"
NOT_NULL, OF_TYPE = "expect_column_values_to_not_be_null", "expect_column_values_to_be_of_type"
UNIQUE, COLUMNS = "expect_column_values_to_be_unique", "expect_table_columns_to_match_set"
ROW_COUNT = "expect_table_row_count_to_be_between"

Key = tuple[str, str | None]  # (expectation type, column)


def failed(report: dict) -> set[Key]:
    return {(e["expectation"], e["column"]) for e in report["expectations"] if not e["success"]}


def unexpected_ids(report: dict) -> dict[Key, set[str]]:
    bad = [e for e in report["expectations"] if not e["success"]]
    return {(e["expectation"], e["column"]): set(e["unexpected_ids"]) for e in bad}


def expected_ids(cases: dict[str, tuple[dict, set[Key]]], id_column: str) -> dict[Key, set[str]]:
    expected: dict[Key, set[str]] = {}
    for row, keys in cases.values():
        for key in keys:
            expected.setdefault(key, set()).add(row[id_column])
    return expected


def validate_pairs(directory, rows, schema=PAIR_V2, min_rows=1) -> dict:
    return validate_folder(str(write_stage(directory, rows, schema)), "pair_v2", dataset="pairs", min_rows=min_rows)


@pytest.mark.parametrize(
    ("arrow_type", "expected"),
    [
        (pa.string(), "str"),  # pandas >= 3 string dtype
        (pa.float64(), "float64"),
        (pa.int32(), "int32"),
        (pa.int64(), "int64"),
        (pa.list_(pa.string()), "list"),  # nested values are compared as Python lists
        (pa.struct([pa.field("name", pa.string())]), "dict"),
    ],
)
def test_pandas_type(arrow_type, expected):
    assert pandas_type(arrow_type) == expected


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (pair_row(0), {}),  # valid: every helper True
        (pair_row(1, rejected=pair_row(1)["chosen"]), {CHOSEN_DIFFERS}),  # chosen == rejected
        (pair_row(1, rejected_rollout_id=pair_row(1)["chosen_rollout_id"]), {ROLLOUTS_DIFFER}),  # one rollout twice
        (pair_row(2, margin=0.75 + 1e-12), {}),  # float noise within tolerance
        (pair_row(3, margin=0.7), {MARGIN_CONSISTENT}),  # margin disagrees with the scores
        # correct_vs_incorrect needs a verified-correct chosen and a verified-incorrect rejected side
        (pair_row(4, pair_type="correct_vs_incorrect"), {}),
        (pair_row(4, pair_type="correct_vs_incorrect", rejected_correct=None), {PAIR_TYPE_CONSISTENT}),
        (pair_row(4, pair_type="correct_vs_incorrect", chosen_correct=False), {PAIR_TYPE_CONSISTENT}),
        (pair_row(5, chosen_correct=None, rejected_correct=None), {}),  # other types: no verdict needed
        (pair_row(6, scores_rejected=scores(0.0, 1.0)[::-1]), {PAIR_SCORES_SORTED}),  # names out of order
        (pair_row(7, scores_chosen=[]), {}),  # an empty score vector is sorted
    ],
)
def test_pair_helper_columns(row, expected):
    helpers = pair_helper_columns(pa.Table.from_pylist([row], schema=relaxed(PAIR_V2)))
    assert {name for name, values in helpers.items() if not values[0]} == set(expected)
    assert list(helpers) == list(PAIR_HELPERS)


def test_pair_helper_columns_missing_inputs_are_false():
    table = pa.Table.from_pylist([pair_row(0)], schema=PAIR_V2).drop_columns(["rejected", "margin", "pair_type"])
    helpers = pair_helper_columns(table)
    assert {name for name, values in helpers.items() if not values[0]} == {
        CHOSEN_DIFFERS,
        MARGIN_CONSISTENT,
        PAIR_TYPE_CONSISTENT,
    }


@pytest.mark.parametrize(
    ("vector", "expected"),
    [
        (scores(1.0, 0.5), True),  # sorted, unique
        ([], True),  # no scores
        (None, False),  # missing vector
        (scores(1.0, 0.5)[::-1], False),  # unsorted
        ([{"name": "a", "score": 1.0}, {"name": "a", "score": 0.0}], False),  # a name twice
        ([{"name": None, "score": 1.0}], False),  # a null name
    ],
)
def test_scores_sorted(vector, expected):
    assert scores_sorted(vector) is expected


def test_pair_suite_covers_every_column():
    suite = build_pair_suite(min_rows=5)
    keys = {(e.expectation_type, getattr(e, "column", None)) for e in suite.expectations}
    for field in PAIR_V2:
        assert (OF_TYPE, field.name) in keys
        assert ((NOT_NULL, field.name) in keys) == (not field.nullable)
    assert {(COLUMNS, None), (ROW_COUNT, None), (UNIQUE, "pair_id"), (IN_SET, "pair_type")} <= keys
    assert {(IN_SET, helper) for helper in PAIR_HELPERS} <= keys


def test_suites_are_keyed_by_manifest_schema_ids():
    expected = ["pair_aspect_v1", "pair_v2", "pair_v3", "prm_v1", "reward_v1", "rl_v1", "rl_v2", "rollout_v2",
                "rollout_v3", "sft_v1", "sft_v2", "split_check_v1"]  # fmt: skip
    assert sorted(SUITES) == expected
    assert all(spec.build().name == schema for schema, spec in SUITES.items())


def test_valid_pairs_pass_and_report_is_deterministic(tmp_path):
    report = validate_pairs(tmp_path / "a", PAIRS)
    assert report["success"], describe_failures(report)
    assert report["rows"] == 3 and report["error"] is None and report["statistics"]["unsuccessful"] == 0
    again = validate_pairs(tmp_path / "b", PAIRS)
    assert json.dumps(again, sort_keys=True) == json.dumps(report, sort_keys=True)
    assert "run_id" not in json.dumps(report) and "batch_id" not in json.dumps(report)


BAD_PAIRS = {
    "chosen_equals_rejected": (pair_row(10, rejected=pair_row(10)["chosen"]), {(IN_SET, CHOSEN_DIFFERS)}),
    # a tie that slipped through (scores consistent)
    "zero_margin": (pair_row(11, score_chosen=0.5, score_rejected=0.5, margin=0.0), {(BETWEEN, "margin")}),
    # chosen scored lower than rejected
    "negative_margin": (pair_row(12, score_chosen=0.25, score_rejected=0.75, margin=-0.5), {(BETWEEN, "margin")}),
    "margin_not_score_difference": (pair_row(13, margin=0.5), {(IN_SET, MARGIN_CONSISTENT)}),
    "score_above_one": (pair_row(14, score_chosen=1.5, margin=1.25), {(BETWEEN, "score_chosen")}),
    "score_below_zero": (pair_row(15, score_rejected=-0.25, margin=1.25), {(BETWEEN, "score_rejected")}),
    "confidence_below_zero": (pair_row(16, confidence=-0.1), {(BETWEEN, "confidence")}),
    "agreement_above_one": (pair_row(17, agreement=2.0), {(BETWEEN, "agreement")}),
    "unknown_split": (pair_row(18, split="dev"), {(IN_SET, "split")}),
    "unknown_pair_type": (pair_row(23, pair_type="random"), {(IN_SET, "pair_type")}),
    "empty_chosen_side": (pair_row(24, chosen_n_tokens=0), {(BETWEEN, "chosen_n_tokens")}),
    # a verified-wrong chosen side in a correct_vs_incorrect pair
    "wrong_pair_type_verdicts": (
        pair_row(25, pair_type="correct_vs_incorrect", chosen_correct=False),
        {(IN_SET, PAIR_TYPE_CONSISTENT)},
    ),
    "same_rollout_twice": (
        pair_row(26, rejected_rollout_id=pair_row(26)["chosen_rollout_id"]),
        {(IN_SET, ROLLOUTS_DIFFER)},
    ),
    "unsorted_scores": (pair_row(27, scores_chosen=scores(1.0, 1.0)[::-1]), {(IN_SET, PAIR_SCORES_SORTED)}),
    "null_task": (pair_row(19, task=None), {(NOT_NULL, "task")}),
    # a null completion cannot be compared with the other one either
    "null_chosen": (pair_row(20, chosen=None), {(NOT_NULL, "chosen"), (IN_SET, CHOSEN_DIFFERS)}),
    # a null score (NaN in pandas) is not a range failure, but it is null and breaks the margin identity
    "null_score": (pair_row(21, score_chosen=None), {(NOT_NULL, "score_chosen"), (IN_SET, MARGIN_CONSISTENT)}),
    # a second row with an existing pair_id: both copies are unexpected (the first is added below)
    "duplicate_pair_id": (pair_row(22, pair_id=PAIRS[0]["pair_id"]), {(UNIQUE, "pair_id")}),
}


@pytest.fixture(scope="module")
def bad_pairs_report(tmp_path_factory) -> dict:
    rows = [*PAIRS, *(row for row, _ in BAD_PAIRS.values())]
    return validate_pairs(tmp_path_factory.mktemp("bad_pairs"), rows, schema=relaxed(PAIR_V2))


@pytest.mark.parametrize("case", sorted(BAD_PAIRS))
def test_bad_pair_fails_its_expectation(bad_pairs_report, case):
    row, expected = BAD_PAIRS[case]
    assert not bad_pairs_report["success"]
    assert {key for key, ids in unexpected_ids(bad_pairs_report).items() if row["pair_id"] in ids} == expected


def test_bad_pairs_fail_nothing_else(bad_pairs_report):
    assert unexpected_ids(bad_pairs_report) == expected_ids(BAD_PAIRS, "pair_id")
    lines = describe_failures(bad_pairs_report)
    assert f"expect_column_values_to_be_unique(pair_id): 2 unexpected of {len(PAIRS) + len(BAD_PAIRS)}" in "\n".join(
        lines
    )
    assert bad_pairs_report["statistics"]["unsuccessful"] == len(lines) == len(expected_ids(BAD_PAIRS, "pair_id"))


def test_extra_mistyped_and_missing_columns_fail(tmp_path):
    # an extra column; int64 instead of int32; a null in an int column, which pandas turns into float64
    fields = [f.with_type(pa.int64()) if f.name == "chosen_n_tokens" else f for f in relaxed(PAIR_V2)]
    drifted = pa.schema([*fields, pa.field("note", pa.string())], metadata=PAIR_V2.metadata)
    rows = [{**r, "note": "x"} for r in [*PAIRS, pair_row(7, rejected_n_tokens=None)]]
    report = validate_pairs(tmp_path / "drifted", rows, schema=drifted)
    assert failed(report) == {
        (COLUMNS, None),
        (OF_TYPE, "chosen_n_tokens"),
        (NOT_NULL, "rejected_n_tokens"),
        (OF_TYPE, "rejected_n_tokens"),
    }

    # a missing column fails the column set, and the expectations on it fail with an exception message
    missing = pa.schema([f for f in PAIR_V2 if f.name != "task"], metadata=PAIR_V2.metadata)
    rows = [{k: v for k, v in r.items() if k != "task"} for r in PAIRS]
    report = validate_pairs(tmp_path / "missing", rows, schema=missing)
    assert failed(report) == {(COLUMNS, None), (NOT_NULL, "task"), (OF_TYPE, "task")}
    assert all(e.get("exception") for e in report["expectations"] if e["column"] == "task")


def test_row_count_follows_min_rows(tmp_path):
    report = validate_pairs(tmp_path / "few", PAIRS, min_rows=len(PAIRS) + 1)
    assert failed(report) == {(ROW_COUNT, None)}
    assert any(line.startswith(f"{ROW_COUNT}: observed 3") for line in describe_failures(report))
    assert validate_pairs(tmp_path / "empty", [], min_rows=0)["success"]


BAD_ROLLOUTS = {
    "duplicate_rollout_id": (rollout_row(10, rollout_id=rollout_row(0)["rollout_id"]), {(UNIQUE, "rollout_id")}),
    "unknown_finish_reason": (rollout_row(11, finish_reason="eos"), {(IN_SET, "finish_reason")}),
    "negative_n_tokens": (rollout_row(12, n_tokens=-1), {(BETWEEN, "n_tokens")}),
    "unknown_split": (rollout_row(13, split="dev"), {(IN_SET, "split")}),
    "null_completion": (rollout_row(14, completion=None), {(NOT_NULL, "completion")}),
}


def test_rollout_suite(tmp_path):
    valid = [rollout_row(i) for i in range(4)]
    report = validate_folder(str(write_stage(tmp_path / "good", valid, ROLLOUT_V2)), "rollout_v2", dataset="rollouts")
    assert report["success"], describe_failures(report)

    rows = [*valid, *(row for row, _ in BAD_ROLLOUTS.values())]
    directory = write_stage(tmp_path / "bad", rows, relaxed(ROLLOUT_V2))
    report = validate_folder(str(directory), "rollout_v2", dataset="rollouts")
    expected = expected_ids(BAD_ROLLOUTS, "rollout_id")
    expected[(UNIQUE, "rollout_id")].add(valid[0]["rollout_id"])  # the original of the duplicate
    assert unexpected_ids(report) == expected


def test_unknown_schema_and_unreadable_folder_are_errors(tmp_path):
    report = validate_folder(str(tmp_path), "step_label_v1", dataset="steps")
    assert not report["success"] and "no validation suite for schema 'step_label_v1'" in report["error"]
    report = validate_folder(str(tmp_path), "pair_v2", dataset="pairs")
    assert not report["success"] and "no *.parquet shards" in report["error"]
    assert describe_failures(report) == [report["error"]]


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["a"], "['a']"),  # all shown
        (list("abcdefg"), "['a', 'b', 'c', 'd', 'e'] and 2 more in the report"),  # a report may keep more ids
    ],
)
def test_shown_ids(ids, expected):
    assert shown(ids) == expected


def test_plain_makes_json_values():
    value = {"a": np.int32(3), "b": [np.float64("nan"), np.array([1, 2])], "c": (True, None)}
    assert plain(value) == {"a": 3, "b": [None, [1, 2]], "c": [True, None]}
