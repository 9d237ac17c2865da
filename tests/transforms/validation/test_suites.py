"""Validation suites: the schema-derived part, helper columns, and each rule failing on exactly the rows it targets.

A Great Expectations run costs about a second whatever the data size, so the bad rows of each suite are validated
together: every bad row must fail exactly its expectations, and every failing expectation must name exactly the rows
expected to fail it (the valid rows are never flagged).
"""

import json

import numpy as np
import pyarrow as pa
import pytest

from rewardmill.schemas import PAIR_V1, ROLLOUT_V2
from rewardmill.transforms.validation.runner import describe_failures, plain, validate_folder
from rewardmill.transforms.validation.suites import (
    CHOSEN_DIFFERS,
    MARGIN_CONSISTENT,
    SUITES,
    build_pair_suite,
    pair_helper_columns,
    pandas_type,
)
from tests.transforms.validation.conftest import PAIRS, pair_row, relaxed, rollout_row, write_stage

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


def validate_pairs(directory, rows, schema=PAIR_V1, min_rows=1) -> dict:
    return validate_folder(str(write_stage(directory, rows, schema)), "pair_v1", dataset="pairs", min_rows=min_rows)


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


def test_pair_helper_columns():
    rows = [
        pair_row(0),  # valid
        pair_row(1, rejected=pair_row(1)["chosen"]),  # chosen == rejected
        pair_row(2, margin=0.75 + 1e-12),  # float noise within tolerance
        pair_row(3, margin=0.7),  # margin disagrees with the scores
    ]
    helpers = pair_helper_columns(pa.Table.from_pylist(rows, schema=PAIR_V1))
    assert helpers == {CHOSEN_DIFFERS: [True, False, True, True], MARGIN_CONSISTENT: [True, True, True, False]}


def test_pair_helper_columns_missing_inputs_are_false():
    table = pa.Table.from_pylist([pair_row(0)], schema=PAIR_V1).drop_columns(["rejected", "margin"])
    assert pair_helper_columns(table) == {CHOSEN_DIFFERS: [False], MARGIN_CONSISTENT: [False]}


def test_pair_suite_covers_every_column():
    suite = build_pair_suite(min_rows=5)
    keys = {(e.expectation_type, getattr(e, "column", None)) for e in suite.expectations}
    for field in PAIR_V1:
        assert (OF_TYPE, field.name) in keys
        assert ((NOT_NULL, field.name) in keys) == (not field.nullable)
    assert {(COLUMNS, None), (ROW_COUNT, None), (UNIQUE, "pair_id"), (IN_SET, CHOSEN_DIFFERS)} <= keys


def test_suites_are_keyed_by_manifest_schema_ids():
    assert sorted(SUITES) == ["pair_v1", "prm_v1", "rollout_v2"]


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
    return validate_pairs(tmp_path_factory.mktemp("bad_pairs"), rows, schema=relaxed(PAIR_V1))


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
    fields = [f.with_type(pa.int64()) if f.name == "chosen_n_tokens" else f for f in relaxed(PAIR_V1)]
    drifted = pa.schema([*fields, pa.field("note", pa.string())], metadata=PAIR_V1.metadata)
    rows = [{**r, "note": "x"} for r in [*PAIRS, pair_row(7, rejected_n_tokens=None)]]
    report = validate_pairs(tmp_path / "drifted", rows, schema=drifted)
    assert failed(report) == {
        (COLUMNS, None),
        (OF_TYPE, "chosen_n_tokens"),
        (NOT_NULL, "rejected_n_tokens"),
        (OF_TYPE, "rejected_n_tokens"),
    }

    # a missing column fails the column set, and the expectations on it fail with an exception message
    missing = pa.schema([f for f in PAIR_V1 if f.name != "task"], metadata=PAIR_V1.metadata)
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
    report = validate_folder(str(tmp_path), "pair_v1", dataset="pairs")
    assert not report["success"] and "no *.parquet shards" in report["error"]
    assert describe_failures(report) == [report["error"]]


def test_plain_makes_json_values():
    value = {"a": np.int32(3), "b": [np.float64("nan"), np.array([1, 2])], "c": (True, None)}
    assert plain(value) == {"a": 3, "b": [None, [1, 2]], "c": [True, None]}
