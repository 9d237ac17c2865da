"""Rubric validation: a generated rubric's scores against the gates' preferences, per rubric and overall; a flagged
rubric dropped from the reward in the buckets."""

from dataclasses import replace

import polars as pl
import pyarrow as pa
import pytest

from rewardmill.schemas import LABEL_V1
from rewardmill.transforms.aggregate.bucket import assemble_bucket
from rewardmill.transforms.aggregate.measured_weights import deciding_gate
from rewardmill.transforms.aggregate.rubric_validation import RubricValidationConfig, rubric_pairs, validate_labeler
from tests.transforms.aggregate.test_bucket import CFG, synthetic


def labels(rows: list[tuple]) -> pl.DataFrame:
    """rows: (prompt, rollout, labeler, score, verdict)."""
    return pl.DataFrame(
        [
            {
                "rollout_id": r,
                "prompt_id": p,
                "labeler": lab,
                "aspect": "a",
                "score": s,
                "confidence": 1.0,
                "verdict": v,
            }
            for p, r, lab, s, v in rows
        ]
    )


GATE = [
    ("p1", "a1", "gate", 1.0, "correct"), ("p1", "a2", "gate", 0.0, "incorrect"),
    ("p1", "a3", "gate", 0.0, "incorrect"),
    ("p2", "b1", "gate", 1.0, "correct"), ("p2", "b2", "gate", 0.0, "incorrect"),
    ("p3", "c1", "gate", 1.0, "correct"), ("p3", "c2", "gate", 1.0, "correct"),  # no trusted pair: all correct
    ("p4", "d1", "gate", None, "abstain"), ("p4", "d2", "gate", 0.0, "incorrect"),  # undecided: no pair
]  # fmt: skip
RUBRIC = [
    ("p1", "a1", "rubric", 0.9, "correct"), ("p1", "a2", "rubric", 0.2, "incorrect"),  # won
    ("p1", "a3", "rubric", 0.9, "correct"),  # tied
    ("p2", "b1", "rubric", 0.1, "incorrect"), ("p2", "b2", "rubric", 0.8, "correct"),  # lost: the rubric is backwards
    ("p3", "c1", "rubric", 0.5, "correct"), ("p3", "c2", "rubric", 0.4, "incorrect"),
    ("p4", "d1", "rubric", 0.5, "correct"), ("p4", "d2", "rubric", None, "abstain"),
]  # fmt: skip


def test_pairs_per_rubric():
    frame = labels(GATE + RUBRIC)
    correct = deciding_gate(frame, ("gate",), 0.5)
    per = rubric_pairs(frame, "rubric", correct)
    assert per.select("prompt_id", "pairs", "won", "tied", "lost", "accuracy").rows() == [
        ("p1", 2, 1, 1, 0, 0.75),  # one won, one tied
        ("p2", 1, 0, 0, 1, 0.0),  # lost
    ]


@pytest.mark.parametrize(
    ("cfg", "flagged", "dropped"),
    [
        (RubricValidationConfig(), ["p2"], []),  # p2 at 0.0 < 0.5: flagged, kept
        (RubricValidationConfig(drop=True), ["p2"], ["p2"]),  # and dropped
        (RubricValidationConfig(min_pairs=2), [], []),  # p2 has one pair: too few to judge it
        (RubricValidationConfig(min_accuracy=0.8), ["p1", "p2"], []),  # p1's 0.75 is below 0.8 too
    ],
)
def test_validate_labeler(cfg, flagged, dropped):
    frame = labels(GATE + RUBRIC)
    record, drop = validate_labeler(frame, "rubric", "ref", deciding_gate(frame, ("gate",), 0.5), cfg)
    assert (record["flagged_prompts"], drop, record["dropped"]) == (flagged, dropped, len(dropped))
    assert record["pairs"] == 3 and record["accuracy"] == pytest.approx(1.5 / 3)  # 1 won + 1 tied / 2 of 3
    assert record["agreement"] == 0.5 and record["tied"] == 1  # 1 won of 2 decided
    assert record["mean_accuracy"] == pytest.approx(0.375) and record["rubrics_validated"] == 2
    assert record["prompts_graded"] == 4 and [w["prompt_id"] for w in record["worst"]] == ["p2", "p1"]


def test_no_trusted_pair_says_so():
    frame = labels(GATE[5:] + RUBRIC[5:])
    record, drop = validate_labeler(
        frame, "rubric", "ref", deciding_gate(frame, ("gate",), 0.5), RubricValidationConfig()
    )
    assert (record["pairs"], record["accuracy"], record["agreement"], drop) == (0, None, None, [])
    with pytest.raises(ValueError, match="min_accuracy"):
        RubricValidationConfig(min_accuracy=2.0)


def test_a_dropped_rubric_leaves_the_reward_and_is_counted():
    rollouts, base = synthetic(6)
    rows = base.to_pylist()
    graded = [
        {**r, "labeler": "rubric", "score": 1.0 - (r["score"] or 0.0)} for r in rows if r["labeler"] == "math_answer"
    ]
    table = pa.Table.from_pylist(rows + graded, LABEL_V1)
    weighted = replace(CFG, aggregate=CFG.aggregate.with_weights({"rubric": 1.0}))
    kept = assemble_bucket(rollouts, table, {}, weighted)
    dropped = assemble_bucket(rollouts, table, {}, replace(weighted, dropped_rubrics=(("rubric", "p001"),)))
    assert kept.counts["labels_dropped_rubric"] == 0
    assert dropped.counts["labels_dropped_rubric"] == 4 and dropped.counts["labels"] == kept.counts["labels"]
    before, after = (pl.from_arrow(r.tables["_rewards"]).sort("rollout_id") for r in (kept, dropped))
    moved = before.join(after, on="rollout_id", suffix="_after").filter(
        pl.col("model_score") != pl.col("model_score_after")
    )
    assert set(moved["prompt_id"]) == {"p001"}  # only the dropped rubric's prompt changed its model score
    names = {s["name"] for s in after.filter(pl.col("prompt_id") == "p001")["scores"].explode()}
    assert "rubric/correctness" not in names


def test_a_trusted_judge_stands_in_for_the_gates():
    """`trusted` names the labelers whose verdicts make the pairs: here a judge that reverses the gate on p2, so the
    backwards rubric of p2 agrees with it, and p1's pairs are the judge's, not the gate's."""
    judge = [
        ("p1", "a1", "judge", 1.0, "correct"), ("p1", "a2", "judge", 0.0, "incorrect"),
        ("p1", "a3", "judge", 1.0, "correct"),
        ("p2", "b1", "judge", 0.0, "incorrect"), ("p2", "b2", "judge", 1.0, "correct"),
    ]  # fmt: skip
    frame = labels(GATE + RUBRIC + judge)
    cfg = RubricValidationConfig(trusted=("judge",))
    trusted = cfg.trusted_labelers(("gate",))
    record, _ = validate_labeler(frame, "rubric", "ref", deciding_gate(frame, trusted, 0.5), cfg, trusted)
    per = rubric_pairs(frame, "rubric", deciding_gate(frame, trusted, 0.5))
    assert per.select("prompt_id", "won", "tied", "lost").rows() == [("p1", 2, 0, 0), ("p2", 1, 0, 0)]
    assert record["trusted"] == ["judge"] and record["accuracy"] == 1.0 and record["flagged"] == 0
    assert RubricValidationConfig().trusted_labelers(("gate",)) == ("gate",)


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        (RubricValidationConfig(trusted=("jduge",)), r"unknown labelers \['jduge'\]"),  # a typo
        (RubricValidationConfig(trusted=("rubric",)), "grade against a generated rubric set and are trusted"),
    ],
)
def test_trusted_labelers_are_checked(cfg, match):
    with pytest.raises(ValueError, match=match):
        cfg.check_labelers(["gate", "judge", "rubric"], ["rubric"], ("gate",))
    with pytest.raises(ValueError, match="twice"):
        RubricValidationConfig(trusted=("judge", "judge"))


def test_a_gate_graded_by_a_rubric_cannot_validate_itself():
    with pytest.raises(ValueError, match="trusted to validate it"):
        RubricValidationConfig().check_labelers(["gate", "rubric"], ["gate"], ("gate",))


def test_criterion_labels_do_not_count_as_the_rubrics_score():
    """A rubric judge's parts (`a:c1`) scored against its whole would flip p2's lost pair to won if they counted."""
    parts = [("p2", "b1", "rubric", 1.0, "correct"), ("p2", "b2", "rubric", 0.0, "incorrect")]
    frame = pl.concat([labels(GATE + RUBRIC), labels(parts).with_columns(aspect=pl.lit("a:c1"))])
    per = rubric_pairs(frame, "rubric", deciding_gate(frame, ("gate",), 0.5))
    assert per.filter(pl.col("prompt_id") == "p2").select("won", "lost").row(0) == (0, 1)
