"""transforms/pairing/best_worst.py: one best-vs-worst pair per prompt; what cannot be paired has a reason."""

import copy
import hashlib
import itertools
import pickle

import pytest

from rewardmill.schemas import PAIR_V1
from rewardmill.transforms.io.parquet import rows_to_table
from rewardmill.transforms.pairing.best_worst import Dropped, PairingConfig, agreement, best_vs_worst, pair_id
from rewardmill.transforms.pairing.scores import RolloutScore, combine

PROMPT = [{"role": "user", "content": "What is 2 + 2? Put the final answer in \\boxed{}."}]


def rollout(rid: str, finish_reason: str = "stop", n_tokens: int = 10) -> dict:
    return {
        "rollout_id": rid,
        "prompt_id": "p1",
        "task": "math",
        "messages": PROMPT,
        "split": "train",
        "completion": f"completion of {rid}",
        "n_tokens": n_tokens,
        "finish_reason": finish_reason,
    }


def score(rid: str, value: float | None, confidence: float = 1.0, labeler: str = "math") -> RolloutScore:
    return RolloutScore(rid, value, confidence, {labeler: value}, (f"{labeler}@1",))


DEFAULT = PairingConfig()


def run(spec: dict[str, float | None | str], cfg: PairingConfig = DEFAULT, truncated: tuple[str, ...] = ()):
    """spec: rollout id -> score (None = labelled but unscored, "unlabelled" = no RolloutScore at all)."""
    rollouts = [rollout(rid, "length" if rid in truncated else "stop") for rid in spec]
    scores = {rid: score(rid, value) for rid, value in spec.items() if value != "unlabelled"}
    pair, dropped = best_vs_worst(rollouts[0] if rollouts else rollout("r0"), rollouts, scores, cfg)
    summary = None if pair is None else (pair["chosen_rollout_id"], pair["rejected_rollout_id"])
    return summary, [(d.row_id, d.reason) for d in dropped]


@pytest.mark.parametrize(
    "spec, cfg, truncated, expected_pair, expected_dropped",
    [
        # a clear pair
        ({"r1": 1.0, "r2": 0.0}, PairingConfig(), (), ("r1", "r2"), []),
        # the order of the rollouts does not matter: best is still chosen
        ({"r2": 0.0, "r1": 1.0}, PairingConfig(), (), ("r1", "r2"), []),
        # three scores: best and worst pair, the middle one is simply not used
        ({"r1": 0.5, "r2": 1.0, "r3": 0.0}, PairingConfig(), (), ("r2", "r3"), []),
        # all tied: no pair (chosen == rejected would teach nothing)
        ({"r1": 1.0, "r2": 1.0}, PairingConfig(), (), None, [("p1", "tie")]),
        # all tied at zero
        ({"r1": 0.0, "r2": 0.0, "r3": 0.0}, PairingConfig(), (), None, [("p1", "tie")]),
        # only one rollout at all
        ({"r1": 1.0}, PairingConfig(), (), None, [("p1", "too_few_scored")]),
        # no rollouts at all
        ({}, PairingConfig(), (), None, [("p1", "too_few_scored")]),
        # one scored, one labelled but unscored
        ({"r1": 1.0, "r2": None}, PairingConfig(), (), None, [("r2", "missing_score"), ("p1", "too_few_scored")]),
        # a rollout with no labels at all is a missing score too
        (
            {"r1": 1.0, "r2": "unlabelled"},
            PairingConfig(),
            (),
            None,
            [("r2", "missing_score"), ("p1", "too_few_scored")],
        ),
        # nothing scored: every rollout is reported, then the prompt
        (
            {"r2": None, "r1": "unlabelled"},
            PairingConfig(),
            (),
            None,
            [("r1", "missing_score"), ("r2", "missing_score"), ("p1", "too_few_scored")],
        ),
        # an unscored rollout is reported even when the others make a pair
        ({"r1": 1.0, "r2": 0.0, "r3": None}, PairingConfig(), (), ("r1", "r2"), [("r3", "missing_score")]),
        # drop_truncated removes a truncated best rollout; the next best is chosen
        (
            {"r1": 1.0, "r2": 0.5, "r3": 0.0},
            PairingConfig(drop_truncated=True),
            ("r1",),
            ("r2", "r3"),
            [("r1", "truncated")],
        ),
        # without drop_truncated a truncated rollout pairs like any other
        ({"r1": 1.0, "r2": 0.0}, PairingConfig(), ("r1",), ("r1", "r2"), []),
        # drop_truncated can leave too few rollouts
        (
            {"r1": 1.0, "r2": 0.0},
            PairingConfig(drop_truncated=True),
            ("r2",),
            None,
            [("r2", "truncated"), ("p1", "too_few_scored")],
        ),
        # an unscored truncated rollout is a missing score first
        (
            {"r1": 1.0, "r2": 0.0, "r3": None},
            PairingConfig(drop_truncated=True),
            ("r3",),
            ("r1", "r2"),
            [("r3", "missing_score")],
        ),
        # a margin equal to min_margin is not enough (pairs need margin > min_margin)
        ({"r1": 0.75, "r2": 0.25}, PairingConfig(min_margin=0.5), (), None, [("p1", "below_min_margin")]),
        # a margin below min_margin
        ({"r1": 0.5, "r2": 0.25}, PairingConfig(min_margin=0.5), (), None, [("p1", "below_min_margin")]),
        # a margin above min_margin
        ({"r1": 1.0, "r2": 0.25}, PairingConfig(min_margin=0.5), (), ("r1", "r2"), []),
        # a tie is reported as a tie even with a min_margin
        ({"r1": 0.5, "r2": 0.5}, PairingConfig(min_margin=0.5), (), None, [("p1", "tie")]),
        # a tie at the top: the lowest rollout_id is chosen
        ({"r3": 1.0, "r1": 1.0, "r2": 0.0}, PairingConfig(), (), ("r1", "r2"), []),
        # a tie at the bottom: the lowest rollout_id is rejected
        ({"r1": 1.0, "r3": 0.0, "r2": 0.0}, PairingConfig(), (), ("r1", "r2"), []),
        # ties at both ends
        ({"r4": 0.0, "r3": 1.0, "r2": 0.0, "r1": 1.0}, PairingConfig(), (), ("r1", "r2"), []),
        # negative scores work like any others
        ({"r1": -1.0, "r2": -3.0}, PairingConfig(), (), ("r1", "r2"), []),
    ],
)
def test_best_vs_worst(spec, cfg, truncated, expected_pair, expected_dropped):
    assert run(spec, cfg, truncated) == (expected_pair, expected_dropped)


def test_deterministic_under_any_input_order():
    spec = {"r1": 1.0, "r2": 1.0, "r3": 0.0, "r4": 0.0, "r5": None, "r6": 0.5}
    results = {
        repr(run(dict(order)))
        for order in itertools.permutations(spec.items())
        if order[0][0] == "r1"  # `prompt` is any rollout of the prompt; keep it fixed to compare whole results
    }
    assert results == {repr((("r1", "r3"), [("r5", "missing_score")]))}


def test_pair_fields():
    rollouts = [rollout("r2", n_tokens=7), rollout("r1", n_tokens=12)]
    scores = {
        "r1": RolloutScore("r1", 0.75, 0.9, {"a": 1.0, "b": 0.5}, ("a@1", "b@2")),
        "r2": RolloutScore("r2", 0.25, 0.6, {"a": 0.0, "b": 0.5}, ("a@1", "c@1")),
    }
    pair, dropped = best_vs_worst(rollouts[0], rollouts, scores, PairingConfig())
    assert dropped == []
    assert pair == {
        "pair_id": pair_id("p1", "r1", "r2"),
        "prompt_id": "p1",
        "prompt": PROMPT,
        "chosen": [{"role": "assistant", "content": "completion of r1"}],
        "rejected": [{"role": "assistant", "content": "completion of r2"}],
        "score_chosen": 0.75,
        "score_rejected": 0.25,
        "margin": 0.5,  # score_chosen - score_rejected
        "confidence": 0.6,  # the weaker of the two
        "agreement": 0.5,  # a orders them as the pair does, b ties (a tie counts against)
        "pair_type": "best_vs_worst",
        "chosen_rollout_id": "r1",
        "rejected_rollout_id": "r2",
        "chosen_n_tokens": 12,
        "rejected_n_tokens": 7,
        "label_sources": ["a@1", "b@2", "c@1"],  # union of both, sorted
        "task": "math",
        "split": "train",
    }
    # the row is a valid PAIR_V1 row in column order
    assert list(pair) == PAIR_V1.names
    assert rows_to_table([pair], PAIR_V1).to_pylist() == [pair]


@pytest.mark.parametrize(
    "chosen_score, rejected_score",
    [
        # binary verifier scores
        (1.0, 0.0),
        # fractional scores
        (0.8, 0.3),
        # negative scores
        (-0.5, -2.0),
    ],
)
def test_margin_is_the_score_difference(chosen_score, rejected_score):
    rollouts = [rollout("a"), rollout("b")]
    scores = {"a": score("a", chosen_score), "b": score("b", rejected_score)}
    pair, _ = best_vs_worst(rollouts[0], rollouts, scores, PairingConfig())
    assert pair["margin"] == chosen_score - rejected_score
    assert pair["margin"] > 0
    assert (pair["score_chosen"], pair["score_rejected"]) == (chosen_score, rejected_score)


def test_agreement_with_two_labelers_that_disagree():
    # labeler a prefers r1 strongly, labeler b prefers r2: the mean still picks r1, with agreement 0.5
    labels = {
        "r1": [("a", 1.0), ("b", 0.5)],
        "r2": [("a", 0.0), ("b", 1.0)],
    }
    scores = {
        rid: combine(
            rid,
            [
                {"labeler": name, "labeler_version": "1", "aspect": "correctness", "score": value, "confidence": 1.0}
                for name, value in labs
            ],
        )
        for rid, labs in labels.items()
    }
    rollouts = [rollout("r1"), rollout("r2")]
    pair, _ = best_vs_worst(rollouts[0], rollouts, scores, PairingConfig())
    assert (pair["chosen_rollout_id"], pair["rejected_rollout_id"]) == ("r1", "r2")
    assert pair["score_chosen"] == 0.75 and pair["score_rejected"] == 0.5
    assert pair["agreement"] == 0.5
    assert pair["label_sources"] == ["a@1", "b@1"]


@pytest.mark.parametrize(
    "chosen, rejected, expected",
    [
        # one labeler agrees
        ({"a": 1.0}, {"a": 0.0}, 1.0),
        # two agree
        ({"a": 1.0, "b": 0.9}, {"a": 0.0, "b": 0.1}, 1.0),
        # one agrees, one disagrees
        ({"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0}, 0.5),
        # a tie counts against
        ({"a": 1.0, "b": 0.5}, {"a": 0.0, "b": 0.5}, 0.5),
        # a labeler that scored only one side does not vote
        ({"a": 1.0, "b": 1.0}, {"a": 0.0, "b": None}, 1.0),
        # a labeler missing on one side does not vote
        ({"a": 1.0, "b": 1.0}, {"a": 0.0}, 1.0),
        # a None on the chosen side does not vote
        ({"a": None, "b": 1.0}, {"a": 1.0, "b": 0.0}, 1.0),
        # nobody scored both: 0.0
        ({"a": 1.0}, {"b": 0.0}, 0.0),
        # three labelers, two agree
        ({"a": 1.0, "b": 1.0, "c": 0.0}, {"a": 0.0, "b": 0.0, "c": 1.0}, 2 / 3),
    ],
)
def test_agreement(chosen, rejected, expected):
    sc = RolloutScore("c", 1.0, 1.0, chosen, ())
    sr = RolloutScore("r", 0.0, 1.0, rejected, ())
    assert agreement(sc, sr) == pytest.approx(expected)


def test_pair_id_stable_and_directional():
    # pinned: pair ids name files' sort order and dataset rows; a change re-keys every pair
    assert pair_id("p1", "r1", "r2") == hashlib.sha256(b"p1\x00r1\x00r2").hexdigest()
    assert pair_id("p1", "r1", "r2") == pair_id("p1", "r1", "r2")
    assert pair_id("p1", "r1", "r2") != pair_id("p1", "r2", "r1")  # swapping chosen/rejected is another pair
    assert pair_id("p1", "r1", "r2") != pair_id("p2", "r1", "r2")
    # the separator keeps ids from running together
    assert pair_id("p1", "r1", "r2") != pair_id("p1r", "1", "r2")


def test_dropped_details_say_why():
    _, dropped = best_vs_worst(
        rollout("r1"),
        [rollout("r1"), rollout("r2")],
        {"r1": score("r1", 0.5), "r2": score("r2", 0.5)},
        PairingConfig(),
    )
    assert dropped == [Dropped("p1", "tie", "all 2 scored rollouts have score 0.5")]


def test_best_vs_worst_does_not_mutate_inputs():
    rollouts = [rollout("r2"), rollout("r1")]
    scores = {"r1": score("r1", 1.0), "r2": score("r2", 0.0)}
    before = copy.deepcopy((rollouts, scores))
    best_vs_worst(rollouts[0], rollouts, scores, PairingConfig())
    assert (rollouts, scores) == before


def test_pairing_config_pickles():
    cfg = PairingConfig(min_margin=0.25, drop_truncated=True)
    assert pickle.loads(pickle.dumps(cfg)) == cfg
