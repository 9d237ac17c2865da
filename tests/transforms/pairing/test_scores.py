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
        ([label("a", 1.0, 0.9)], RolloutScore("r1", 1.0, 0.9, {"a/c": 1.0}, ("a@1",))),
        # the mean over labelers, and the mean confidence
        (
            [label("a", 1.0, 1.0), label("b", 0.0, 0.5)],
            RolloutScore("r1", 0.5, 0.75, {"a/c": 1.0, "b/c": 0.0}, ("a@1", "b@1")),
        ),
        # an unscored label counts neither in the score nor in the confidence, but is kept per labeler and as a source
        (
            [label("a", 0.25, 0.8), label("b", None, 0.1)],
            RolloutScore("r1", 0.25, 0.8, {"a/c": 0.25, "b/c": None}, ("a@1", "b@1")),
        ),
        # no label could score: None, never a silent 0
        (
            [label("a", None), label("b", None)],
            RolloutScore("r1", None, 0.0, {"a/c": None, "b/c": None}, ("a@1", "b@1")),
        ),
        # no labels at all
        ([], RolloutScore("r1", None, 0.0, {}, ())),
        # a score of 0.0 is a real score, not a missing one
        ([label("a", 0.0, 0.6)], RolloutScore("r1", 0.0, 0.6, {"a/c": 0.0}, ("a@1",))),
        # sources are sorted and deduplicated; versions are part of the source
        (
            [label("z", 1.0, version="2"), label("a", 1.0, version="10"), label("z", 1.0, version="2", aspect="d")],
            RolloutScore("r1", 1.0, 1.0, {"a/c": 1.0, "z/c": 1.0, "z/d": 1.0}, ("a@10", "z@2")),
        ),
    ],
)
def test_combine(labels, expected):
    assert combine("r1", labels) == expected


def test_per_labeler_sorted_by_labeler_and_aspect():
    result = combine("r1", [label("c", 1.0), label("a", 0.0, aspect="z"), label("a", 1.0), label("b", None)])
    assert list(result.per_labeler) == ["a/c", "a/z", "b/c", "c/c"]


def test_combine_does_not_mutate_labels():
    labels = [label("b", 1.0), label("a", 0.0)]
    before = [dict(lab) for lab in labels]
    combine("r1", labels)
    assert labels == before


def test_rollout_score_pickles():
    score = combine("r1", [label("a", 1.0), label("b", None)])
    assert pickle.loads(pickle.dumps(score)) == score


def test_combine_independent_of_label_order():
    labels = [label("a", 0.1, 0.1), label("b", 0.2, 0.2), label("c", 0.3, 0.3)]
    forward, backward = combine("r1", labels), combine("r1", labels[::-1])
    assert (forward.score, forward.confidence) == (backward.score, backward.confidence)


def test_per_labeler_independent_of_label_order_with_two_aspects():
    labels = [label("a", 1.0, aspect="correctness"), label("a", 0.0, aspect="style")]
    assert combine("r1", labels).per_labeler == combine("r1", labels[::-1]).per_labeler
