"""transforms/pairing/scores.py: the labels of one rollout -> one RolloutScore (None when nobody could score)."""

import pickle

import pytest

from rewardmill.transforms.pairing.scores import RolloutScore, combine


def label(labeler: str, score: float | None, confidence: float = 1.0, version: str = "1", aspect: str = "c") -> dict:
    return {
        "rollout_id": "r1",
        "prompt_id": "p1",
        "labeler": labeler,
        "labeler_version": version,
        "aspect": aspect,
        "score": score,
        "confidence": confidence,
        "verdict": "abstain" if score is None else "correct",
        "rationale": None,
        "raw": None,
    }


@pytest.mark.parametrize(
    "labels, expected",
    [
        # one labeler, one score
        ([label("a", 1.0, 0.9)], RolloutScore("r1", 1.0, 0.9, {"a": 1.0}, ("a@1",))),
        # the mean over labelers, and the mean confidence
        (
            [label("a", 1.0, 1.0), label("b", 0.0, 0.5)],
            RolloutScore("r1", 0.5, 0.75, {"a": 1.0, "b": 0.0}, ("a@1", "b@1")),
        ),
        # an unscored label counts neither in the score nor in the confidence, but is kept per labeler and as a source
        (
            [label("a", 0.25, 0.8), label("b", None, 0.1)],
            RolloutScore("r1", 0.25, 0.8, {"a": 0.25, "b": None}, ("a@1", "b@1")),
        ),
        # no label could score: None, never a silent 0
        ([label("a", None), label("b", None)], RolloutScore("r1", None, 0.0, {"a": None, "b": None}, ("a@1", "b@1"))),
        # no labels at all
        ([], RolloutScore("r1", None, 0.0, {}, ())),
        # a score of 0.0 is a real score, not a missing one
        ([label("a", 0.0, 0.6)], RolloutScore("r1", 0.0, 0.6, {"a": 0.0}, ("a@1",))),
        # sources are sorted and deduplicated; versions are part of the source
        (
            [label("z", 1.0, version="2"), label("a", 1.0, version="10"), label("z", 1.0, version="2", aspect="d")],
            RolloutScore("r1", 1.0, 1.0, {"a": 1.0, "z": 1.0}, ("a@10", "z@2")),
        ),
    ],
)
def test_combine(labels, expected):
    assert combine("r1", labels) == expected


def test_per_labeler_sorted_by_labeler():
    result = combine("r1", [label("c", 1.0), label("a", 0.0), label("b", None)])
    assert list(result.per_labeler) == ["a", "b", "c"]


def test_combine_does_not_mutate_labels():
    labels = [label("b", 1.0), label("a", 0.0)]
    before = [dict(lab) for lab in labels]
    combine("r1", labels)
    assert labels == before


def test_rollout_score_pickles():
    score = combine("r1", [label("a", 1.0), label("b", None)])
    assert pickle.loads(pickle.dumps(score)) == score


@pytest.mark.xfail(
    strict=True,
    reason="BUG: combine() sums scores and confidences in input order; CoGroupByKey gives labels in no fixed order "
    "and float addition is not associative, so the same labels can give a different score (and pair/tie) per run",
)
def test_combine_independent_of_label_order():
    labels = [label("a", 0.1, 0.1), label("b", 0.2, 0.2), label("c", 0.3, 0.3)]
    forward, backward = combine("r1", labels), combine("r1", labels[::-1])
    assert (forward.score, forward.confidence) == (backward.score, backward.confidence)


@pytest.mark.xfail(
    strict=True,
    reason="BUG: with two aspects from one labeler (LABEL_V1 rows are per aspect), per_labeler keeps whichever "
    "label came last in input order, so agreement depends on CoGroupByKey order",
)
def test_per_labeler_independent_of_label_order_with_two_aspects():
    labels = [label("a", 1.0, aspect="correctness"), label("a", 0.0, aspect="style")]
    assert combine("r1", labels).per_labeler == combine("r1", labels[::-1]).per_labeler
