"""Rejects grouped by reason: counts, a few examples in row id order, the same however the rows arrive."""

import polars as pl
import pytest

from rewardmill.transforms.stage.outputs import reject
from rewardmill.transforms.view.rejects import summarize_rejects

ROWS = [
    reject("assemble", "q3", "tie", "equal scores"),
    reject("assemble", "q1", "tie", "equal scores"),
    reject("assemble", "q2", "tie", "equal scores"),
    reject("assemble", "q9", "tie", "equal scores"),
    reject("assemble", "q5", "missing_score", "no labeler scored it", {"rollout_id": "r5"}),
    reject("assemble", None, "low_confidence", "0.1 < 0.5"),
]


def frame(rows):
    return pl.DataFrame(rows, schema={k: pl.String for k in ("stage", "row_id", "reason", "detail", "payload")})


def test_counts_by_reason_with_examples_in_id_order():
    summary = summarize_rejects("pairs", frame(ROWS), examples=3)
    assert summary.dataset == "pairs" and summary.total == 6
    assert [(r["reason"], r["count"]) for r in summary.reasons] == [
        ("tie", 4),  # most first
        ("low_confidence", 1),  # then by name
        ("missing_score", 1),
    ]
    assert [e["row_id"] for e in summary.reasons[0]["examples"]] == ["q1", "q2", "q3"]  # 3 of 4, by id
    assert summary.reasons[2]["examples"] == [
        {"stage": "assemble", "row_id": "q5", "detail": "no labeler scored it", "payload": '{"rollout_id": "r5"}'}
    ]
    assert summary.reasons[1]["examples"][0]["row_id"] is None  # a reject without a row id still shows


def test_same_rejects_in_any_order_give_the_same_summary():
    assert summarize_rejects("x", frame(ROWS)) == summarize_rejects("x", frame(ROWS[::-1]).lazy())


@pytest.mark.parametrize(
    "rows, total, reasons",
    [
        ([], 0, []),  # an empty _rejects/
        ([{**ROWS[0], "reason": None}], 1, ["(no reason)"]),  # malformed: counted, not lost
    ],
)
def test_edge_cases(rows, total, reasons):
    summary = summarize_rejects("x", frame(rows))
    assert summary.total == total and [r["reason"] for r in summary.reasons] == reasons


def test_not_reject_rows_fail_naming_the_columns():
    with pytest.raises(ValueError, match=r"x: rejects lack the column\(s\) \['stage', 'row_id'"):
        summarize_rejects("x", pl.DataFrame({"reason": ["a"]}))
