import polars as pl

from rewardmill.transforms.evaluation.labeler_accuracy import labeler_accuracy, verified_sides

PAIRS = pl.DataFrame(
    {
        "chosen_rollout_id": ["a1", "b1", "c1", "d1"],
        "rejected_rollout_id": ["a2", "b2", "c2", "d2"],
        "chosen_correct": [True, True, None, True],  # c: no gate decided the chosen side
        "rejected_correct": [False, False, False, True],  # d: both correct (ranked by a judge)
    }
).to_dicts()


def labels(labeler: str, scores: dict[str, float | None], aspect: str = "correct") -> pl.DataFrame:
    return pl.DataFrame(
        {"labeler": labeler, "aspect": aspect, "rollout_id": list(scores), "score": list(scores.values())},
        schema={"labeler": pl.String, "aspect": pl.String, "rollout_id": pl.String, "score": pl.Float64},
    )


def test_only_verified_correct_over_incorrect_pairs_count():
    assert verified_sides(PAIRS)["chosen_rollout_id"].to_list() == ["a1", "b1"]


def test_accuracy_ties_coverage_and_gates():
    verified = verified_sides(PAIRS)
    frame = pl.concat(
        [
            labels("gate", {"a1": 1.0, "a2": 0.0, "b1": 1.0, "b2": 0.0}),
            labels("judge", {"a1": 0.9, "a2": 0.2, "b1": 0.1, "b2": 0.8}),  # right on a, wrong on b
            labels("tied", {"a1": 0.5, "a2": 0.5, "b1": None, "b2": 0.1}),  # a tie (wrong), b not scorable
            labels("other_task", {"x1": 1.0, "x2": 0.0}),  # labels no rollout of these pairs: not listed
            labels("panel", {"a1": 3.0, "a2": 1.0}, aspect="helpful"),  # only pair a is its to rank
        ]
    )
    result = labeler_accuracy(verified, frame, gates=("gate",))
    assert list(result) == ["gate/correct", "judge/correct", "panel/helpful", "tied/correct"]
    assert result["gate/correct"] | {} == {
        "gate": True,
        "pairs": 2,
        "scored": 2,
        "coverage": 1.0,
        "ties": 0,
        "n": 2,
        "accuracy": 1.0,
        "ci_low": 1.0,
        "ci_high": 1.0,
    }
    judge = result["judge/correct"]
    assert not judge["gate"] and judge["accuracy"] == 0.5 and judge["ci_low"] == 0.0 and judge["ci_high"] == 1.0
    tied = result["tied/correct"]
    assert (tied["pairs"], tied["scored"], tied["coverage"], tied["ties"], tied["accuracy"]) == (2, 1, 0.5, 1, 0.0)
    assert result["panel/helpful"]["pairs"] == 1 and result["panel/helpful"]["accuracy"] == 1.0


def test_no_verified_pairs_gives_no_entries():
    empty = verified_sides([p for p in PAIRS if p["chosen_rollout_id"] == "d1"])
    assert labeler_accuracy(empty, labels("gate", {"d1": 1.0, "d2": 1.0})) == {}
