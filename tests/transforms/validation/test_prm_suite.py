"""PRM_V1 suite: valid stepwise rows pass; each broken rule fails exactly its expectation on exactly its rows.

As in test_suites, the bad rows are validated together in one Great Expectations run (about a second each).
"""

import pyarrow as pa
import pytest

from rewardmill.schemas import PRM_V1
from rewardmill.schemas.step import METHODS
from rewardmill.transforms.validation.prm_suite import (
    FIRST_ERROR_VALID,
    LABELS_MATCH_FIRST_ERROR,
    PRM_HELPERS,
    SOFT_LABELS_MATCH,
    STEPS_MATCH,
    build_prm_suite,
    prm_helper_columns,
)
from rewardmill.transforms.validation.runner import describe_failures, validate_folder
from rewardmill.transforms.validation.suites import SUITES
from tests.transforms.validation.conftest import STEPS, prm_row, relaxed, write_stage
from tests.transforms.validation.test_suites import (
    BETWEEN,
    COLUMNS,
    IN_SET,
    NOT_NULL,
    OF_TYPE,
    ROW_COUNT,
    expected_ids,
    failed,
    unexpected_ids,
)

COMPOUND_UNIQUE = "expect_compound_columns_to_be_unique"

GOOD_PRM = [
    prm_row(0),  # no wrong step
    prm_row(1),  # last step wrong
    # the same rollout from another labeler: a judge gives no soft labels
    prm_row(1, labeler="judge", method="judge", soft_labels=[None] * 3, min_score=0.0, last_score=0.0),
    # truncated after the first error (assemble's default)
    prm_row(3, completions=STEPS[:2], labels=[True, False], soft_labels=[1.0, 0.0], first_error_step=1, min_score=0.0),
    prm_row(4, min_score=None, last_score=None),  # no score aggregates: nulls pass the range checks
    # not truncated: steps after the first error are kept and labelled False
    prm_row(5, labels=[False, False, False], first_error_step=0, method="binary_search+pseudo_reference"),
]


def validate_prm(directory, rows, schema=PRM_V1, min_rows=1) -> dict:
    return validate_folder(str(write_stage(directory, rows, schema)), "prm_v1", dataset="prm", min_rows=min_rows)


def test_prm_suite_is_registered_and_covers_every_column():
    assert SUITES["prm_v1"].schema is PRM_V1 and SUITES["prm_v1"].helpers is prm_helper_columns
    suite = build_prm_suite()
    keys = {(e.expectation_type, getattr(e, "column", None)) for e in suite.expectations}
    for field in PRM_V1:
        assert (OF_TYPE, field.name) in keys
        assert ((NOT_NULL, field.name) in keys) == (not field.nullable)
    assert {(COLUMNS, None), (ROW_COUNT, None), (COMPOUND_UNIQUE, None), (IN_SET, "method")} <= keys
    assert {(IN_SET, helper) for helper in PRM_HELPERS} <= keys
    (method,) = [e for e in suite.expectations if e.expectation_type == IN_SET and e.column == "method"]
    assert method.value_set == list(METHODS) and {"consensus", "mc+pseudo_reference"} <= set(METHODS)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (prm_row(0), [True, True, True, True]),
        (prm_row(1, completions=STEPS[:2]), [False, True, True, True]),  # a step without a label
        (prm_row(0, completions=[], labels=[], soft_labels=[]), [False, True, True, True]),  # no step at all
        (prm_row(0, soft_labels=[1.0]), [True, False, True, True]),  # one soft label for three steps
        (prm_row(0, soft_labels=None), [True, True, True, True]),  # null soft_labels: left to its not-null check
        (prm_row(0, first_error_step=3), [True, True, False, True]),  # past the last step (labels all True)
        (prm_row(0, first_error_step=-2), [True, True, False, True]),
        (prm_row(1, labels=[True, True, True]), [True, True, True, False]),  # the first error labelled True
        (prm_row(1, labels=[True, True, False], first_error_step=-1), [True, True, True, False]),
        (prm_row(1, labels=None), [False, False, False, False]),  # nothing to compare with
        (prm_row(1, first_error_step=None), [True, True, False, False]),
        # method turns labels each turn: a later turn recovers after the first error...
        (prm_row(1, labels=[True, False, True], first_error_step=1, method="turns"), [True, True, True, True]),
        # ...which the prefix convention does not allow
        (prm_row(1, labels=[True, False, True], first_error_step=1), [True, True, True, False]),
        # ...but before and at the first error the turns rows obey it too
        (prm_row(1, labels=[False, False, True], first_error_step=1, method="turns"), [True, True, True, False]),
        (prm_row(1, labels=[True, True, True], first_error_step=1, method="turns"), [True, True, True, False]),
    ],
)
def test_prm_helper_columns(row, expected):
    helpers = prm_helper_columns(pa.Table.from_pylist([row], schema=relaxed(PRM_V1)))
    assert {name: values[0] for name, values in helpers.items()} == dict(
        zip((STEPS_MATCH, SOFT_LABELS_MATCH, FIRST_ERROR_VALID, LABELS_MATCH_FIRST_ERROR), expected, strict=True)
    )


def test_prm_helper_columns_missing_inputs():
    table = pa.Table.from_pylist([prm_row(0)], schema=PRM_V1).drop_columns(["labels", "soft_labels"])
    assert prm_helper_columns(table) == {
        STEPS_MATCH: [False],
        SOFT_LABELS_MATCH: [True],  # the column-set expectation reports the missing column
        FIRST_ERROR_VALID: [False],
        LABELS_MATCH_FIRST_ERROR: [False],
    }


def test_valid_prm_rows_pass(tmp_path):
    report = validate_prm(tmp_path / "good", GOOD_PRM)
    assert report["success"], describe_failures(report)
    assert report["rows"] == len(GOOD_PRM) and report["schema"] == "prm_v1" and report["error"] is None


BAD_PRM = {
    "label_without_step": (prm_row(10, completions=STEPS[:2]), {(IN_SET, STEPS_MATCH)}),
    "no_steps": (prm_row(12, completions=[], labels=[], soft_labels=[]), {(IN_SET, STEPS_MATCH)}),
    "soft_labels_short": (prm_row(14, soft_labels=[1.0, 0.5]), {(IN_SET, SOFT_LABELS_MATCH)}),
    "null_soft_labels": (prm_row(16, soft_labels=None), {(NOT_NULL, "soft_labels")}),
    "first_error_past_last_step": (prm_row(18, first_error_step=3), {(IN_SET, FIRST_ERROR_VALID)}),
    "first_error_below_minus_one": (prm_row(20, first_error_step=-2), {(IN_SET, FIRST_ERROR_VALID)}),
    "first_error_labelled_true": (prm_row(11, labels=[True, True, True]), {(IN_SET, LABELS_MATCH_FIRST_ERROR)}),
    "false_before_first_error": (prm_row(13, labels=[False, True, False]), {(IN_SET, LABELS_MATCH_FIRST_ERROR)}),
    "false_without_error": (prm_row(22, labels=[True, False, True]), {(IN_SET, LABELS_MATCH_FIRST_ERROR)}),
    # a wrong prefix cannot become right
    "true_after_first_error": (
        prm_row(15, labels=[False, True, False], first_error_step=0),
        {(IN_SET, LABELS_MATCH_FIRST_ERROR)},
    ),
    "unknown_split": (prm_row(24, split="dev"), {(IN_SET, "split")}),
    "unknown_method": (prm_row(26, method="vote"), {(IN_SET, "method")}),
    "min_score_above_one": (prm_row(28, min_score=1.5), {(BETWEEN, "min_score")}),
    "last_score_below_zero": (prm_row(30, last_score=-0.25), {(BETWEEN, "last_score")}),
    "null_prompt": (prm_row(32, prompt=None), {(NOT_NULL, "prompt")}),
    # null labels: every rule that reads them fails too
    "null_labels": (
        prm_row(17, labels=None),
        {
            (NOT_NULL, "labels"),
            (IN_SET, STEPS_MATCH),
            (IN_SET, SOFT_LABELS_MATCH),
            (IN_SET, FIRST_ERROR_VALID),
            (IN_SET, LABELS_MATCH_FIRST_ERROR),
        },
    ),
    # a second row of the same labeler for a rollout: both copies are unexpected (the first is in GOOD_PRM)
    "duplicate_labeler_rollout": (prm_row(34, rollout_id=GOOD_PRM[0]["rollout_id"]), {(COMPOUND_UNIQUE, None)}),
}


@pytest.fixture(scope="module")
def bad_prm_report(tmp_path_factory) -> dict:
    rows = [*GOOD_PRM, *(row for row, _ in BAD_PRM.values())]
    return validate_prm(tmp_path_factory.mktemp("bad_prm"), rows, schema=relaxed(PRM_V1))


@pytest.mark.parametrize("case", sorted(BAD_PRM))
def test_bad_prm_row_fails_its_expectation(bad_prm_report, case):
    row, expected = BAD_PRM[case]
    assert not bad_prm_report["success"]
    assert {key for key, ids in unexpected_ids(bad_prm_report).items() if row["rollout_id"] in ids} == expected


def test_bad_prm_rows_fail_nothing_else(bad_prm_report):
    expected = expected_ids(BAD_PRM, "rollout_id")
    expected[(COMPOUND_UNIQUE, None)].add(GOOD_PRM[0]["rollout_id"])
    assert unexpected_ids(bad_prm_report) == expected
    assert bad_prm_report["statistics"]["unsuccessful"] == len(describe_failures(bad_prm_report)) == len(expected)


def test_prm_structure_and_row_count(tmp_path):
    # int64 first_error_step instead of int32, and an extra column
    fields = [f.with_type(pa.int64()) if f.name == "first_error_step" else f for f in PRM_V1]
    drifted = pa.schema([*fields, pa.field("note", pa.string())], metadata=PRM_V1.metadata)
    report = validate_prm(tmp_path / "drifted", [{**r, "note": "x"} for r in GOOD_PRM], schema=drifted)
    assert failed(report) == {(COLUMNS, None), (OF_TYPE, "first_error_step")}

    assert failed(validate_prm(tmp_path / "few", GOOD_PRM, min_rows=10)) == {(ROW_COUNT, None)}
    assert validate_prm(tmp_path / "empty", [], min_rows=0)["success"]
